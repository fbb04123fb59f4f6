// SPDX-License-Identifier: Apache-2.0
// Builds GGUF v3 files the way llama.cpp writes them: metadata in insertion order, tensor infos in
// insertion order, each tensor's data at the next multiple of the alignment, zero padding after
// every tensor (the last included), default alignment 32. Files are written to a temporary name
// and renamed into place, so a reader never sees half a file.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "format/gguf/gguf_limits.h"
#include "format/gguf/gguf_value.h"
#include "format/tensor_type.h"

namespace synapse {

class GgufWriter {
 public:
  // Fills `out` (exactly the tensor's byte size) with the tensor's data. Called once, while the
  // file is written, so data can be produced one tensor at a time.
  using FillFn = std::function<Status(std::span<uint8_t> out)>;

  GgufWriter() = default;

  // Adds or replaces a key (a replaced key keeps its position). general.alignment must be a u32
  // power of two and sets the alignment.
  Status set(std::string_view key, GgufValue value);
  Status set_string(std::string_view key, std::string value) {
    return set(key, GgufValue::string(std::move(value)));
  }
  template <typename T>
  Status set_scalar(std::string_view key, T value) {
    return set(key, GgufValue::scalar(value));
  }
  bool contains(std::string_view key) const;

  // Adds a tensor whose bytes the caller keeps alive until write_*() returns.
  Status add_tensor(std::string_view name, TensorType type, std::span<const uint64_t> dims,
                    std::span<const uint8_t> data);
  // Adds a tensor whose bytes `fill` produces at write time.
  Status add_tensor(std::string_view name, TensorType type, std::span<const uint64_t> dims,
                    FillFn fill);

  uint32_t alignment() const { return alignment_; }
  size_t tensor_count() const { return tensors_.size(); }
  // Total size of the file that write_*() will produce.
  uint64_t file_size() const;

  // Called as bytes are written (for progress lines).
  using ProgressFn = std::function<void(uint64_t bytes_written, uint64_t total_bytes)>;
  Status write_file(const std::string& path, const ProgressFn& progress = nullptr) const;
  Result<std::vector<uint8_t>> write_to_buffer() const;

 private:
  struct Entry {
    std::string key;
    GgufValue value;
  };
  struct Tensor {
    std::string name;
    TensorType type;
    std::vector<uint64_t> dims;
    uint64_t bytes = 0;
    uint64_t data_offset = 0;  // relative to the data section
    std::span<const uint8_t> data;
    FillFn fill;
  };
  Status check_tensor(std::string_view name, TensorType type, std::span<const uint64_t> dims,
                      uint64_t* bytes) const;
  std::vector<uint8_t> encode_header() const;  // everything before the data section, padded
  Status write(const std::function<Status(std::span<const uint8_t>)>& sink) const;

  std::vector<Entry> entries_;
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_bytes_ = 0;  // data section size, padding included
};

}  // namespace synapse
