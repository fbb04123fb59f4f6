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
#include "model/arch/architecture.h"
#include "model/tensor_check.h"

namespace synapse {
namespace {

// Array elements visited one by one per value; the rest of a long array is covered by its raw
// bytes, its strings and its last element.
constexpr uint64_t kMaxElementsVisited = 1024;

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

[[noreturn]] void violated(const char* what) {
  std::fprintf(stderr, "gguf_reader_fuzz: invariant violated: %s\n", what);
  std::abort();
}

void require(bool condition, const char* what) {
  if (!condition) violated(what);
}

// Keeps the compiler from discarding the reads.
volatile uint64_t g_sink = 0;

uint64_t one_if(bool b) { return b ? 1 : 0; }

uint64_t visit_value(const GgufValue& value) {
  uint64_t sum = value.to_display_string().size() + value.serialized_bytes();
  sum += value.to_uint().value_or(0) + static_cast<uint64_t>(value.to_int().value_or(0));
  sum += one_if(value.to_double().has_value()) + one_if(value.to_bool().value_or(false));
  sum += value.to_string().value_or("").size();
  if (!value.is_array()) return sum;
  const uint64_t n = value.array_size();
  sum += static_cast<uint64_t>(value.element_type());
  for (uint8_t b : value.raw_elements()) sum += b;
  for (std::string_view s : value.strings()) {
    for (char c : s) sum += static_cast<unsigned char>(c);
  }
  for (const GgufValue& inner : value.arrays()) sum += visit_value(inner);
  for (uint64_t i = 0; i < n && i < kMaxElementsVisited; ++i) {
    sum += value.element(i).to_display_string(2).size();
  }
  if (n > 0) sum += value.element(n - 1).to_display_string(2).size();
  return sum;
}

// Every typed accessor on every key: each must answer a value or a Status, never assert.
uint64_t visit_metadata(const GgufMetadata& md) {
  uint64_t sum = 0;
  for (const GgufKeyValue& kv : md.entries()) {
    require(md.find(kv.key) == &kv.value, "metadata index finds each key");
    sum += visit_value(kv.value);
    const std::string_view k = kv.key;
    sum += one_if(md.get_string(k).ok()) + one_if(md.get_u32(k).ok()) + one_if(md.get_u64(k).ok()) +
           one_if(md.get_i64(k).ok()) + one_if(md.get_f32(k).ok()) + one_if(md.get_bool(k).ok()) +
           one_if(md.get_u32_or(k, 1).ok()) + one_if(md.get_f32_or(k, 1.0f).ok()) +
           one_if(md.get_bool_or(k, true).ok()) + one_if(md.get_string_or(k, "x").ok());
    if (const auto strings = md.get_string_array(k); strings.ok()) sum += strings->size();
    if (const auto floats = md.get_f32_array(k); floats.ok()) sum += floats->size();
    if (const auto ints = md.get_i32_array(k); ints.ok()) sum += ints->size();
  }
  sum += one_if(md.architecture().ok());
  if (const auto key = md.arch_key("context_length"); key.ok()) sum += key->size();
  return sum;
}

uint64_t visit_model(const GgufFile& file) {
  const Result<HParams> hp = read_model_hparams(file.metadata());
  if (!hp.ok()) return hp.status().to_string().size();
  const Architecture* arch = find_architecture(hp->arch);
  require(arch != nullptr, "read_model_hparams accepted an unknown architecture");
  const TensorCheckReport report = check_model_tensors(*arch, *hp, file);
  uint64_t sum = report.expected_required + report.present_required + report.present_optional;
  for (const Status& problem : report.problems) sum += problem.to_string().size();
  for (const std::string& name : report.unknown) sum += name.size();
  return sum;
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
