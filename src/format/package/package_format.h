// SPDX-License-Identifier: Apache-2.0
// The `.synapse` package format, version 1 (docs/formats/synapse-package.md): a fixed 128-byte
// header, a manifest (the source model's metadata in GGUF's key/value encoding, then the
// package's own keys), a tensor table with an XXH3-128 checksum per tensor, and tensor data that
// keeps the source encodings byte for byte, each tensor at an aligned (page) offset. Everything
// is little-endian. This header holds the constants and the header record shared by the reader
// and the writer.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/hash.h"
#include "format/gguf/gguf_limits.h"
#include "format/gguf/gguf_metadata.h"
#include "format/model_file.h"

namespace synapse {

inline constexpr std::array<uint8_t, 8> kPackageMagic = {'S', 'Y', 'N', 'A', 'P', 'S', 'E', 0};
inline constexpr uint32_t kPackageVersion = 1;
inline constexpr uint64_t kPackageHeaderBytes = 128;
// Tensor data starts at multiples of this: a page, so tensors can be mapped, advised and used in
// place. Readers accept any power of two from kPackageMinAlignment to kPackageMaxAlignment.
inline constexpr uint64_t kPackageDefaultAlignment = 4096;
inline constexpr uint64_t kPackageMinAlignment = 4096;
inline constexpr uint64_t kPackageMaxAlignment = uint64_t{1} << 30;
inline constexpr uint32_t kPackageMaxDims = 4;

// Keys of the manifest's package section (the model section holds the source's keys verbatim).
namespace package_key {
inline constexpr std::string_view kSourceFormat = "package.source.format";  // "gguf"
inline constexpr std::string_view kSourceName = "package.source.name";      // file name
inline constexpr std::string_view kSourceBytes = "package.source.bytes";    // u64
inline constexpr std::string_view kSourceSha256 = "package.source.sha256";  // 64 hex digits
inline constexpr std::string_view kGraphHash = "package.graph.sha256";      // 64 hex digits
inline constexpr std::string_view kCreatedBy = "package.created_by";        // "synapse 0.1.0"
}  // namespace package_key

// Byte offsets of the header's fields.
namespace package_header_field {
inline constexpr uint64_t kMagic = 0;             // u8[8]
inline constexpr uint64_t kVersion = 8;           // u32
inline constexpr uint64_t kHeaderBytes = 12;      // u32, = 128
inline constexpr uint64_t kFileBytes = 16;        // u64
inline constexpr uint64_t kAlignment = 24;        // u64
inline constexpr uint64_t kManifestOffset = 32;   // u64, = 128
inline constexpr uint64_t kManifestBytes = 40;    // u64
inline constexpr uint64_t kTableOffset = 48;      // u64, = manifest end
inline constexpr uint64_t kTableBytes = 56;       // u64
inline constexpr uint64_t kTensorCount = 64;      // u64
inline constexpr uint64_t kDataOffset = 72;       // u64, = table end rounded up to the alignment
inline constexpr uint64_t kDataBytes = 80;        // u64, = file end - data offset
inline constexpr uint64_t kManifestXxh3 = 88;     // XXH3-128: u64 high, u64 low
inline constexpr uint64_t kTableXxh3 = 104;       // XXH3-128: u64 high, u64 low
inline constexpr uint64_t kHeaderChecksum = 120;  // XXH3-64 of bytes [0, 120)
}  // namespace package_header_field

struct PackageHeader {
  uint32_t version = kPackageVersion;
  uint32_t header_bytes = kPackageHeaderBytes;
  uint64_t file_bytes = 0;
  uint64_t alignment = kPackageDefaultAlignment;
  uint64_t manifest_offset = kPackageHeaderBytes;
  uint64_t manifest_bytes = 0;
  uint64_t table_offset = 0;
  uint64_t table_bytes = 0;
  uint64_t tensor_count = 0;
  uint64_t data_offset = 0;
  uint64_t data_bytes = 0;
  Hash128 manifest_checksum;
  Hash128 table_checksum;

  // The 128 header bytes, header checksum included.
  std::array<uint8_t, kPackageHeaderBytes> encode() const;
  // Reads the fields of 128 bytes; checks nothing (the parser does, field by field).
  static PackageHeader decode(std::span<const uint8_t, kPackageHeaderBytes> bytes);
};

// XXH3-64 of the header bytes before the checksum field.
uint64_t package_header_checksum(std::span<const uint8_t, kPackageHeaderBytes> bytes);

// Recomputes the header, manifest and table checksums of a package held in memory, where the
// header's section sizes allow (bounded: ranges outside `bytes` are left alone). For tests and
// fuzzing only: it lets a mutated package reach the checks behind the checksums.
void reseal_package_checksums(std::span<uint8_t> bytes);

// Caps for reading packages; the manifest's key/value pairs use the GGUF caps.
struct PackageLimits {
  GgufLimits manifest;
  uint64_t max_tensors = 1u << 20;
  uint64_t max_tensor_name_bytes = 4096;
};

// The graph identity of a model: SHA-256 (hex) over its architecture, its hyper-parameters (every
// "<architecture>." key) and its tensors' names, types and shapes, each list sorted, so it does
// not depend on key or tensor order and never on the weights or the tokenizer. Two files with the
// same graph hash run the same computation graph (execution plans can be cached by it).
std::string compute_graph_hash(const GgufMetadata& metadata, std::span<const TensorView> tensors);

}  // namespace synapse
