// SPDX-License-Identifier: Apache-2.0
// Fuzzes the reference-logits reader (KL-divergence base files): any input is either refused
// with a Status or yields a view whose every chunk can be read within the input.
#include <cstddef>
#include <cstdint>
#include <span>

#include "eval/reference_logits_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = synapse::ReferenceLogitsFile::parse(std::span<const uint8_t>(data, size), "fuzz");
  if (!file.ok()) return 0;
  float sum = 0.0f;
  for (uint32_t c = 0; c < file->header().n_chunks; ++c) {
    for (float v : file->chunk_logits(c)) sum += v;
  }
  for (int32_t t : file->tokens()) sum += static_cast<float>(t);
  volatile float sink = sum;
  (void)sink;
  return 0;
}
