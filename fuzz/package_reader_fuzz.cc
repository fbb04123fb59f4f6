// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the package reader. Each input is parsed twice: as it is (which exercises
// the magic, version and checksum checks; mutations rarely survive them) and after its header,
// manifest and table checksums are recomputed (reseal_package_checksums), which lets mutations
// reach the structural checks behind the checksums. An accepted package is used the way a loader
// would (every metadata value, the model's hyper-parameters and tensor check, every tensor byte)
// and verified in full; the reader's invariants (every byte accounted for, views inside the data
// section, errors with a format code and an offset inside the input) abort when broken.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "format/package/package_file.h"
#include "format/package/package_verify.h"
#include "fuzz/model_file_visit.h"

namespace synapse {
namespace {

using fuzz::require;

// The defaults' checks with smaller caps, as for GGUF, so the fuzzer does not spend its time
// building huge valid tables.
PackageLimits fuzz_limits() {
  PackageLimits limits;
  limits.max_tensors = 1u << 14;
  limits.max_tensor_name_bytes = 1u << 10;
  limits.manifest.max_kv = 1u << 14;
  limits.manifest.max_key_bytes = 1u << 12;
  limits.manifest.max_string_bytes = 1u << 20;
  limits.manifest.max_array_elements = 1u << 18;
  limits.manifest.max_nested_arrays = 1u << 14;
  return limits;
}

bool is_format_error(ErrorCode code) {
  const auto n = static_cast<uint16_t>(code);
  return n >= static_cast<uint16_t>(ErrorCode::kFileTruncated) &&
         n <= static_cast<uint16_t>(ErrorCode::kChecksumMismatch);
}

uint64_t check(std::span<const uint8_t> input) {
  static const PackageLimits limits = fuzz_limits();
  const Result<PackageFile> file = PackageFile::parse(input, "fuzz.synapse", limits);
  if (!file.ok()) {
    const Status status = file.status();
    require(is_format_error(status.code()), "parse failed with a code outside the format errors");
    require(status.where().byte_offset.has_value() && *status.where().byte_offset <= input.size(),
            "error offset inside the input");
    return status.to_string().size();
  }
  const PackageLayout& l = file->layout();
  require(l.file_bytes == input.size(), "layout covers the input");
  require(l.header_bytes + l.manifest_bytes + l.tensor_table_bytes + l.alignment_padding_bytes +
                  l.tensor_data_bytes + l.tensor_padding_bytes ==
              l.file_bytes,
          "layout parts sum to the file size");
  require(file->parsed_bytes() <= file->header().data_offset, "open read no tensor data");
  uint64_t sum =
      fuzz::visit_metadata(file->metadata()) + fuzz::visit_metadata(file->package_metadata());
  const PackageHeader& h = file->header();
  for (const PackageTensorInfo& t : file->tensors()) {
    require(file->find_tensor(t.name) == &t, "tensor index finds each tensor");
    require(t.data_offset % h.alignment == 0, "tensor data aligned");
    const std::span<const uint8_t> data = file->tensor_data(t);
    require(data.size() == t.bytes, "tensor view has the tensor's size");
    require(data.data() >= input.data() + h.data_offset &&
                data.data() + data.size() <= input.data() + input.size(),
            "tensor view inside the data section");
    for (uint8_t b : data) sum += b;  // ASan checks each read
  }
  const auto verified = verify_package(*file);
  require(verified.ok() || is_format_error(verified.status().code()),
          "verify failed with a code outside the format errors");
  return sum + fuzz::visit_model(*file);
}

}  // namespace
}  // namespace synapse

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace synapse;
  const std::span<const uint8_t> input(data, size);
  fuzz::g_sink = fuzz::g_sink + check(input);
  std::vector<uint8_t> resealed(input.begin(), input.end());
  reseal_package_checksums(resealed);
  fuzz::g_sink = fuzz::g_sink + check(resealed);
  return 0;
}
