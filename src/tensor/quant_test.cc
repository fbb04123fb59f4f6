// SPDX-License-Identifier: Apache-2.0
#include "tensor/quant.h"

#include <gtest/gtest.h>

namespace synapse {
namespace {

TEST(Quant, RowBytes) {
  EXPECT_EQ(row_bytes(TensorType::kQ4_K, 512), 288u);
  EXPECT_EQ(row_bytes(TensorType::kQ8_0, 64), 68u);
}

}  // namespace
}  // namespace synapse
