// SPDX-License-Identifier: Apache-2.0
// What the model-file fuzzers do with an accepted file: use everything a loader would (every
// metadata value through every typed accessor, the model's hyper-parameters and tensor check),
// so that a view or value escaping the input is caught by ASan; and abort when an invariant the
// reader promises is broken (libFuzzer reports the abort as a crash).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "format/model_file.h"
#include "model/arch/architecture.h"
#include "model/tensor_check.h"

namespace synapse::fuzz {

// Array elements visited one by one per value; the rest of a long array is covered by its raw
// bytes, its strings and its last element.
inline constexpr uint64_t kMaxElementsVisited = 1024;

[[noreturn]] inline void violated(const char* what) {
  std::fprintf(stderr, "fuzz: invariant violated: %s\n", what);
  std::abort();
}

inline void require(bool condition, const char* what) {
  if (!condition) violated(what);
}

// Keeps the compiler from discarding the reads.
inline volatile uint64_t g_sink = 0;

inline uint64_t one_if(bool b) { return b ? 1 : 0; }

inline uint64_t visit_value(const GgufValue& value) {
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
inline uint64_t visit_metadata(const GgufMetadata& md) {
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

inline uint64_t visit_model(const ModelFile& file) {
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

}  // namespace synapse::fuzz
