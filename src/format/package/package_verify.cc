// SPDX-License-Identifier: Apache-2.0
#include "format/package/package_verify.h"

#include <algorithm>

#include "base/checked_math.h"
#include "base/hash.h"

namespace synapse {
namespace {

constexpr uint64_t kChunkBytes = 8 << 20;

// Offset of the first non-zero byte, if any.
std::optional<uint64_t> first_nonzero(std::span<const uint8_t> bytes) {
  const auto it = std::find_if(bytes.begin(), bytes.end(), [](uint8_t b) { return b != 0; });
  if (it == bytes.end()) return std::nullopt;
  return static_cast<uint64_t>(it - bytes.begin());
}

}  // namespace

Result<PackageVerifyReport> verify_package(const PackageFile& file,
                                           const PackageVerifyOptions& options) {
  const std::span<const uint8_t> bytes = file.file_bytes();
  const PackageHeader& h = file.header();
  const MappedFile& mapping = file.mapping();  // empty for parsed buffers: advice is skipped
  mapping.advise(AccessHint::kSequential, h.data_offset);
  const uint64_t total = h.file_bytes - (h.table_offset + h.table_bytes);
  PackageVerifyReport report;
  const auto check_padding = [&](uint64_t begin, uint64_t end, const std::string& what) -> Status {
    if (const auto bad = first_nonzero(bytes.subspan(begin, end - begin))) {
      return Status(
          ErrorCode::kBadValue, "padding " + what + " is not zero",
          ErrorWhere{.path = file.path(), .byte_offset = begin + *bad, .field = "padding"});
    }
    report.bytes_checked += end - begin;
    return ok_status();
  };
  SYN_RETURN_IF_ERROR(
      check_padding(h.table_offset + h.table_bytes, h.data_offset, "before the tensor data"));
  for (const PackageTensorInfo& t : file.tensors()) {
    const uint64_t start = h.data_offset + t.data_offset;
    const std::span<const uint8_t> data = bytes.subspan(start, t.bytes);
    Xxh3Hasher128 hasher;
    for (uint64_t done = 0; done < data.size(); done += kChunkBytes) {
      const uint64_t n = std::min(kChunkBytes, data.size() - done);
      hasher.update(data.subspan(done, n));
      mapping.advise(AccessHint::kDontNeed, start + done, n);
      report.bytes_checked += n;
      if (options.progress) options.progress(report.bytes_checked, total);
    }
    const Hash128 actual = hasher.digest();
    if (actual != t.checksum) {
      return Status(
          ErrorCode::kChecksumMismatch,
          "tensor data is damaged: XXH3-128 " + actual.to_hex() + ", expected " +
              t.checksum.to_hex(),
          ErrorWhere{.path = file.path(), .byte_offset = start, .tensor = std::string(t.name)});
    }
    const uint64_t end = start + t.bytes;
    SYN_RETURN_IF_ERROR(check_padding(end, *checked_align_up(end, h.alignment),
                                      "after tensor '" + std::string(t.name) + "'"));
    ++report.tensors_checked;
  }
  if (options.progress) options.progress(report.bytes_checked, total);
  return report;
}

}  // namespace synapse
