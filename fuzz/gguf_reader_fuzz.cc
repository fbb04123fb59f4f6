// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the GGUF reader: parses the input and, when it is accepted, uses everything
// a loader would (every metadata value through every accessor, the model's hyper-parameters and
// tensor check, every byte of every tensor view), so a view or value that escapes the input is
// caught by ASan. Invariants the parser promises are checked too; a broken one aborts, which
// libFuzzer reports as a crash.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>

#include "format/gguf/gguf_file.h"
#include "fuzz/model_file_visit.h"

namespace synapse {
namespace {

using fuzz::require;
using fuzz::visit_metadata;
using fuzz::visit_model;

// The defaults' checks with smaller caps, so the fuzzer does not spend its time building huge
// (valid) tables. Still above what the fixture seeds need (vocabularies of ~150k tokens fit in
// max_array_elements), so they parse and reach the code downstream.
GgufLimits fuzz_limits() {
  GgufLimits limits;
  limits.max_tensors = 1u << 14;
  limits.max_kv = 1u << 14;
  limits.max_key_bytes = 1u << 12;
  limits.max_string_bytes = 1u << 20;
  limits.max_array_elements = 1u << 18;
  limits.max_nested_arrays = 1u << 14;
  limits.max_tensor_name_bytes = 1u << 10;
  return limits;
}

uint64_t visit_file(const GgufFile& file, std::span<const uint8_t> input) {
  const GgufLayout& l = file.layout();
  require(l.file_bytes == input.size(), "layout covers the input");
  require(l.header_bytes + l.metadata_bytes + l.tensor_info_bytes + l.alignment_padding_bytes +
                  l.tensor_data_bytes + l.tensor_padding_bytes + l.trailing_bytes ==
              l.file_bytes,
          "layout parts sum to the file size");
  require(file.parsed_bytes() <= input.size(), "parser stayed inside the input");
  uint64_t sum = visit_metadata(file.metadata());
  for (const GgufTensorInfo& t : file.tensors()) {
    require(file.find_tensor(t.name) == &t, "tensor index finds each tensor");
    require(t.data_offset % file.alignment() == 0, "tensor data aligned");
    const std::span<const uint8_t> data = file.tensor_data(t);
    require(data.size() == t.bytes, "tensor view has the tensor's size");
    require(data.data() >= input.data() + file.data_section_offset() &&
                data.data() + data.size() <= input.data() + input.size(),
            "tensor view inside the data section");
    for (uint8_t b : data) sum += b;  // ASan checks each read
    sum += t.element_count() + t.shape().size();
  }
  return sum + visit_model(file);
}

}  // namespace
}  // namespace synapse

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace synapse;
  using fuzz::g_sink;
  using fuzz::require;
  static const GgufLimits limits = fuzz_limits();
  const std::span<const uint8_t> input(data, size);
  const Result<GgufFile> file = GgufFile::parse(input, "fuzz.gguf", limits);
  if (!file.ok()) {
    const Status status = file.status();
    const auto code = static_cast<uint16_t>(status.code());
    require(code >= static_cast<uint16_t>(ErrorCode::kFileTruncated) &&
                code <= static_cast<uint16_t>(ErrorCode::kBadValue),
            "parse failed with a code outside the format errors");
    require(status.where().byte_offset.has_value() && *status.where().byte_offset <= size,
            "error offset inside the input");
    g_sink = g_sink + status.to_string().size();
    return 0;
  }
  g_sink = g_sink + visit_file(*file, input);
  return 0;
}
