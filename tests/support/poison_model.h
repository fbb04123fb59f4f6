// SPDX-License-Identifier: Apache-2.0
// Breaks a synthesized model on purpose: fills one F32 tensor with NaN, as a corrupt download or
// a bad conversion would, so tests can check that every output path answers numeric_fault
// instead of returning NaN (JSON null) with success. Header-only: its users link format already.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "format/gguf/gguf_file.h"
#include "tests/support/test_support.h"

namespace synapse::testing {

inline void poison_tensor_with_nan(const std::string& path, std::string_view tensor) {
  uint64_t offset = 0;
  uint64_t count = 0;
  {
    Result<GgufFile> file = GgufFile::open(path);
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    const GgufTensorInfo* info = file->find_tensor(tensor);
    ASSERT_NE(info, nullptr) << tensor;
    ASSERT_EQ(info->type, TensorType::kF32) << tensor;
    offset = file->data_section_offset() + info->data_offset;
    count = info->element_count();
  }
  std::vector<uint8_t> bytes = read_file_bytes(path);
  ASSERT_LE(offset + count * sizeof(float), bytes.size());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (uint64_t i = 0; i < count; ++i) {
    std::memcpy(bytes.data() + offset + i * sizeof(float), &nan, sizeof nan);
  }
  write_file_bytes(path, bytes);
}

}  // namespace synapse::testing
