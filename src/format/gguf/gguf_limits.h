// SPDX-License-Identifier: Apache-2.0
// Safety caps for reading GGUF files. Every count and length in a file is first checked against
// these, then against the bytes actually left in the file, before anything is allocated.
#pragma once

#include <cstdint>

namespace synapse {

struct GgufLimits {
  // Real models have up to a few tens of thousands of tensors (large MoE models) and under a
  // hundred keys; the caps leave two orders of magnitude of headroom.
  uint64_t max_tensors = 1u << 20;
  uint64_t max_kv = 1u << 20;
  // The GGUF spec caps keys at 65535 bytes.
  uint64_t max_key_bytes = 65535;
  // Chat templates reach ~100 KB; nothing legitimate comes near this.
  uint64_t max_string_bytes = 256ull << 20;
  // The largest vocabularies (merges of Llama 3: 280k) fit with room to spare.
  uint64_t max_array_elements = 1ull << 28;
  // Nested arrays: depth and total count of nested array values (each costs a heap object).
  uint32_t max_array_depth = 4;
  uint64_t max_nested_arrays = 1u << 20;
  // ggml's GGML_MAX_NAME is 64 including the terminator; we read longer names (up to this cap)
  // but the writer keeps to ggml's limit so llama.cpp can read what we write.
  uint64_t max_tensor_name_bytes = 4096;
};

// ggml's limit on tensor names (63 bytes + terminator); the writer enforces it.
inline constexpr uint64_t kGgmlMaxTensorNameBytes = 63;
inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr uint32_t kGgufMaxDims = 4;
inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32

}  // namespace synapse
