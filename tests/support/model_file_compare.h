// SPDX-License-Identifier: Apache-2.0
// Compares two model files (a GGUF and the package made from it): the same metadata, key by key
// in the same order with the same types and encoded values, and the same tensors in the same
// order with the same types, shapes and bytes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "format/gguf/gguf_kv_codec.h"
#include "format/model_file.h"

namespace synapse::testing {

inline std::vector<uint8_t> encoded_value(const GgufValue& value) {
  std::vector<uint8_t> out;
  append_gguf_value(out, value);
  return out;
}

inline void expect_same_model_file(const ModelFile& expected, const ModelFile& actual) {
  const auto a = expected.metadata().entries();
  const auto b = actual.metadata().entries();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].key, b[i].key);
    EXPECT_EQ(a[i].value.type(), b[i].value.type()) << a[i].key;
    EXPECT_EQ(encoded_value(a[i].value), encoded_value(b[i].value)) << a[i].key;
  }
  ASSERT_EQ(expected.tensor_views().size(), actual.tensor_views().size());
  for (size_t i = 0; i < expected.tensor_views().size(); ++i) {
    const TensorView& s = expected.tensor_views()[i];
    const TensorView& p = actual.tensor_views()[i];
    ASSERT_EQ(s.name, p.name) << "tensor order";
    EXPECT_EQ(s.type, p.type) << s.name;
    EXPECT_EQ(s.n_dims, p.n_dims) << s.name;
    EXPECT_EQ(s.dims, p.dims) << s.name;
    EXPECT_TRUE(std::equal(s.data.begin(), s.data.end(), p.data.begin(), p.data.end())) << s.name;
  }
}

}  // namespace synapse::testing
