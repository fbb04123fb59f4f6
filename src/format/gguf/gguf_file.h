// SPDX-License-Identifier: Apache-2.0
// A validated, read-only GGUF file (v2 or v3). Opening checks everything before anything is used:
// every count, length and offset is bounded by the file and by GgufLimits, arithmetic is
// overflow-checked, tensor data lies inside the data section, aligned and without overlap. Only the
// header, metadata and tensor infos are read; tensor data stays untouched in the mapping until a
// caller asks for it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "format/gguf/gguf_limits.h"
#include "format/gguf/gguf_metadata.h"
#include "format/model_file.h"
#include "format/tensor_type.h"

namespace synapse {

struct GgufTensorInfo {
  std::string_view name;
  TensorType type = TensorType::kF32;
  uint32_t n_dims = 0;
  std::array<uint64_t, kGgufMaxDims> dims = {1, 1, 1, 1};  // ne[0] innermost; unused dims are 1
  uint64_t data_offset = 0;  // relative to the start of the data section
  uint64_t bytes = 0;
  uint64_t info_file_offset = 0;  // where this tensor's info record starts in the file

  std::span<const uint64_t> shape() const { return {dims.data(), n_dims}; }
  uint64_t element_count() const { return dims[0] * dims[1] * dims[2] * dims[3]; }
};

// How the file's bytes are accounted for; the parts sum to file_bytes.
struct GgufLayout {
  uint64_t file_bytes = 0;
  uint64_t header_bytes = 0;             // magic, version, counts
  uint64_t metadata_bytes = 0;           // key/value pairs
  uint64_t tensor_info_bytes = 0;        // tensor info records
  uint64_t alignment_padding_bytes = 0;  // between the infos and the data section
  uint64_t tensor_data_bytes = 0;        // sum of tensor sizes
  uint64_t tensor_padding_bytes = 0;     // alignment padding and gaps around tensors (the last
                                         // tensor's padding included)
  uint64_t trailing_bytes = 0;           // after the last tensor's padded end
};

class GgufFile final : public ModelFile {
 public:
  // Maps and validates a file.
  static Result<GgufFile> open(const std::string& path, const GgufLimits& limits = {});
  // Validates bytes the caller keeps alive for the lifetime of the result (tests, fuzzing).
  static Result<GgufFile> parse(std::span<const uint8_t> bytes, std::string display_name,
                                const GgufLimits& limits = {});

  GgufFile(GgufFile&&) noexcept = default;
  GgufFile& operator=(GgufFile&&) noexcept = default;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  ~GgufFile() override = default;

  // ModelFile.
  std::string_view format_name() const override { return "gguf"; }
  const std::string& path() const override { return path_; }
  const GgufMetadata& metadata() const override { return metadata_; }
  std::span<const TensorView> tensor_views() const override { return views_; }
  const TensorView* tensor_view(std::string_view name) const override;
  const MappedFile& mapping() const override { return mapping_; }

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_section_offset() const { return data_offset_; }
  // GGUF specifics: tensor infos with their offsets, in file order (parallel to tensor_views()).
  std::span<const GgufTensorInfo> tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  // The tensor's bytes, a view into the mapping.
  std::span<const uint8_t> tensor_data(const GgufTensorInfo& tensor) const;
  const GgufLayout& layout() const { return layout_; }
  std::span<const uint8_t> file_bytes() const { return bytes_; }
  // The furthest byte offset the parser looked at: validation touches nothing past the infos.
  uint64_t parsed_bytes() const { return parsed_bytes_; }

 private:
  GgufFile() = default;
  friend class GgufParser;

  MappedFile mapping_;  // empty when parsing caller-owned bytes
  std::span<const uint8_t> bytes_;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  uint64_t parsed_bytes_ = 0;
  GgufMetadata metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::vector<TensorView> views_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
  GgufLayout layout_;
};

}  // namespace synapse
