// SPDX-License-Identifier: Apache-2.0
// Small helpers for the tests that read tensors out of the reference GGUF fixtures.
#pragma once

#include <cctype>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf/gguf_file.h"

namespace synapse::testing {

// An F32 tensor's values (empty when the tensor is missing).
inline std::vector<float> tensor_floats(const GgufFile& file, std::string_view name) {
  const GgufTensorInfo* info = file.find_tensor(name);
  if (info == nullptr) return {};
  const std::span<const uint8_t> bytes = file.tensor_data(*info);
  std::vector<float> out(bytes.size() / sizeof(float));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

// "w.q4_k" for Q4_K: the fixtures' tensor names.
inline std::string fixture_tensor_name(std::string_view type_name) {
  std::string out = "w.";
  for (char c : type_name) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace synapse::testing
