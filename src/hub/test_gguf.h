// SPDX-License-Identifier: Apache-2.0
// Test-only: small GGUFs for the hub tests, whole or as a gguf-split set (the first part carries
// the metadata; every part carries split.no, split.count and split.tensors.count).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "format/gguf/gguf_writer.h"

namespace synapse::hub::testing {

inline constexpr int kTestTensors = 3;

// Tensors [first, last) of the test model; `split` adds the split keys for part `part` of
// `parts`.
inline std::string test_gguf(uint8_t seed, int first = 0, int last = kTestTensors, int part = -1,
                             int parts = 0) {
  GgufWriter w;
  if (part >= 0) {
    EXPECT_TRUE(w.set_scalar("split.no", static_cast<uint16_t>(part)).ok());
    EXPECT_TRUE(w.set_scalar("split.count", static_cast<uint16_t>(parts)).ok());
    EXPECT_TRUE(w.set_scalar("split.tensors.count", int32_t{kTestTensors}).ok());
  }
  if (part <= 0) {
    EXPECT_TRUE(w.set_string("general.architecture", "llama").ok());
    EXPECT_TRUE(w.set_string("general.name", "hub-test-" + std::to_string(seed)).ok());
    EXPECT_TRUE(w.set_scalar("llama.block_count", uint32_t{1}).ok());
    EXPECT_TRUE(w.set("tokenizer.ggml.tokens", GgufValue::string_array({"a", "b"})).ok());
  }
  static const char* kNames[kTestTensors] = {"token_embd.weight", "blk.0.attn_norm.weight",
                                             "output.weight"};
  static std::vector<std::vector<uint8_t>> keep;  // alive until the writer has written
  for (int t = first; t < last; ++t) {
    const uint64_t rows = t == 1 ? 1 : 48;
    std::vector<float> values(64 * rows);
    for (size_t i = 0; i < values.size(); ++i) {
      values[i] = static_cast<float>((i * 7 + seed * 13 + static_cast<size_t>(t)) % 97) / 97.0f;
    }
    std::vector<uint8_t> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    keep.push_back(std::move(bytes));
    const std::vector<uint64_t> dims =
        rows == 1 ? std::vector<uint64_t>{64} : std::vector<uint64_t>{64, rows};
    EXPECT_TRUE(w.add_tensor(kNames[t], TensorType::kF32, dims, keep.back()).ok());
  }
  const Result<std::vector<uint8_t>> out = w.write_to_buffer();
  EXPECT_TRUE(out.ok());
  keep.clear();
  return out.ok() ? std::string(out->begin(), out->end()) : std::string();
}

}  // namespace synapse::hub::testing
