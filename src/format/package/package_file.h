// SPDX-License-Identifier: Apache-2.0
// A validated, read-only `.synapse` package. Opening checks the header (magic, version, its own
// checksum, sizes against the file), the manifest and the tensor table (each against its XXH3-128
// checksum, then field by field, bounded like the GGUF reader); tensor data is not read, so
// opening costs the same for 500 MB as for 50 GB. Tensor checksums are checked by
// verify_package(). A package is a ModelFile: metadata() is exactly the source model's metadata,
// and the tensor views point into the mapping.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/hash.h"
#include "base/mapped_file.h"
#include "base/status.h"
#include "format/model_file.h"
#include "format/package/package_format.h"

namespace synapse {

struct PackageTensorInfo {
  std::string_view name;
  TensorType type = TensorType::kF32;
  uint32_t n_dims = 0;
  std::array<uint64_t, kPackageMaxDims> dims = {1, 1, 1, 1};  // ne[0] innermost
  uint64_t data_offset = 0;                                   // relative to the data section
  uint64_t bytes = 0;
  Hash128 checksum;                 // XXH3-128 of the tensor's bytes
  uint64_t record_file_offset = 0;  // where its table record starts in the file

  std::span<const uint64_t> shape() const { return {dims.data(), n_dims}; }
  uint64_t element_count() const { return dims[0] * dims[1] * dims[2] * dims[3]; }
};

// How the file's bytes are accounted for; the parts sum to file_bytes.
struct PackageLayout {
  uint64_t file_bytes = 0;
  uint64_t header_bytes = 0;
  uint64_t manifest_bytes = 0;
  uint64_t tensor_table_bytes = 0;
  uint64_t alignment_padding_bytes = 0;  // between the table and the data section
  uint64_t tensor_data_bytes = 0;
  uint64_t tensor_padding_bytes = 0;  // after each tensor, up to the alignment
};

// What the manifest's package section says.
struct PackageSource {
  std::string_view format;  // "gguf"
  std::string_view name;    // the source's file name
  uint64_t bytes = 0;
  std::string_view sha256;      // hex
  std::string_view graph_hash;  // hex
  std::string_view created_by;
};

class PackageFile final : public ModelFile {
 public:
  static Result<PackageFile> open(const std::string& path, const PackageLimits& limits = {});
  // Validates bytes the caller keeps alive for the lifetime of the result (tests, fuzzing).
  static Result<PackageFile> parse(std::span<const uint8_t> bytes, std::string display_name,
                                   const PackageLimits& limits = {});

  PackageFile(PackageFile&&) noexcept = default;
  PackageFile& operator=(PackageFile&&) noexcept = default;
  PackageFile(const PackageFile&) = delete;
  PackageFile& operator=(const PackageFile&) = delete;
  ~PackageFile() override = default;

  // ModelFile.
  std::string_view format_name() const override { return "synapse"; }
  const std::string& path() const override { return path_; }
  const GgufMetadata& metadata() const override { return metadata_; }
  std::span<const TensorView> tensor_views() const override { return views_; }
  const TensorView* tensor_view(std::string_view name) const override;
  const MappedFile& mapping() const override { return mapping_; }

  const PackageHeader& header() const { return header_; }
  // The manifest's package section, and its required keys decoded.
  const GgufMetadata& package_metadata() const { return package_metadata_; }
  const PackageSource& source() const { return source_; }
  // Tensor table records in file order (parallel to tensor_views()), with checksums.
  std::span<const PackageTensorInfo> tensors() const { return tensors_; }
  const PackageTensorInfo* find_tensor(std::string_view name) const;
  std::span<const uint8_t> tensor_data(const PackageTensorInfo& tensor) const;
  const PackageLayout& layout() const { return layout_; }
  std::span<const uint8_t> file_bytes() const { return bytes_; }
  // The furthest byte offset validation looked at: never past the tensor table.
  uint64_t parsed_bytes() const { return parsed_bytes_; }

 private:
  PackageFile() = default;
  friend class PackageParser;

  MappedFile mapping_;  // empty when parsing caller-owned bytes
  std::span<const uint8_t> bytes_;
  std::string path_;
  PackageHeader header_;
  uint64_t parsed_bytes_ = 0;
  GgufMetadata metadata_;
  GgufMetadata package_metadata_;
  PackageSource source_;
  std::vector<PackageTensorInfo> tensors_;
  std::vector<TensorView> views_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
  PackageLayout layout_;
};

}  // namespace synapse
