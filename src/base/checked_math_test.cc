// SPDX-License-Identifier: Apache-2.0
#include "base/checked_math.h"

#include <gtest/gtest.h>

namespace synapse {
namespace {

TEST(CheckedMath, AddAndMultiplyDetectOverflow) {
  EXPECT_EQ(checked_add(2, 3), 5u);
  EXPECT_EQ(checked_add(UINT64_MAX, 0), UINT64_MAX);
  EXPECT_FALSE(checked_add(UINT64_MAX, 1).has_value());
  EXPECT_EQ(checked_mul(1ull << 31, 1ull << 32), 1ull << 63);
  EXPECT_FALSE(checked_mul(1ull << 32, 1ull << 32).has_value());
  EXPECT_EQ(checked_mul(0, UINT64_MAX), 0u);
}

TEST(CheckedMath, AlignUp) {
  EXPECT_EQ(checked_align_up(0, 32), 0u);
  EXPECT_EQ(checked_align_up(1, 32), 32u);
  EXPECT_EQ(checked_align_up(32, 32), 32u);
  EXPECT_EQ(checked_align_up(33, 32), 64u);
  EXPECT_FALSE(checked_align_up(UINT64_MAX - 3, 32).has_value());
  EXPECT_TRUE(is_power_of_two(1));
  EXPECT_TRUE(is_power_of_two(1ull << 63));
  EXPECT_FALSE(is_power_of_two(0));
  EXPECT_FALSE(is_power_of_two(48));
}

}  // namespace
}  // namespace synapse
