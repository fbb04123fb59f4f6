// SPDX-License-Identifier: Apache-2.0
#include "base/numeric_check.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

namespace synapse {
namespace {

TEST(CheckFinite, PassesFiniteValues) {
  const std::vector<float> v = {0.0f, -1.5f, std::numeric_limits<float>::max()};
  EXPECT_TRUE(check_finite(v, "embedding").ok());
  EXPECT_TRUE(check_finite({}, "embedding").ok());
}

TEST(CheckFinite, NamesTheFirstNonFiniteValue) {
  std::vector<float> v = {1.0f, 2.0f, std::numeric_limits<float>::quiet_NaN()};
  Status s = check_finite(v, "embedding 3");
  EXPECT_EQ(s.code(), ErrorCode::kNumericFault);
  EXPECT_NE(s.message().find("embedding 3 holds NaN at element 2"), std::string::npos);
  v[0] = -std::numeric_limits<float>::infinity();
  EXPECT_NE(check_finite(v, "score").message().find("infinity at element 0"), std::string::npos);
}

}  // namespace
}  // namespace synapse
