// SPDX-License-Identifier: Apache-2.0
// The parameters of the ops a forward pass is made of, as plain data: what a weight matrix is
// (a view of rows of a GGUF type), how a matrix product treats its activations, RoPE and
// attention settings. The CPU kernels implement these ops and every backend's interface takes
// them, so neither depends on the other's types: a device backend needs this header, not the
// CPU kernel layer.
//
// Everything here is a plain aggregate or a constexpr function with no library calls, so the
// per-ISA kernel files can include it (kernels/README.md); the ISA files must not call the
// functions (an out-of-line copy would be a weak symbol compiled with ISA flags).
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/tensor_type.h"

namespace synapse {

// n_rows rows of k elements of `type`; row r starts at data + r * row_stride bytes (in the
// memory of whoever runs the op: the file's mapping for the CPU).
struct WeightMatrix {
  TensorType type;
  const uint8_t* data;
  size_t row_stride;
  size_t n_rows;
  size_t k;
  // The rows were rearranged by the kernel level's InterleavedKernels (kernels/kernel_table.h):
  // data holds groups of rows in that level's order and row_stride is row_bytes(type, k).
  bool interleaved;
};

enum class DotPath : uint8_t {
  kQuantized,  // activations quantized to the weight type's 8-bit partner (F32 weights: F32)
  kF32,        // activations kept in F32: slower for quantized weights, no activation rounding
};

// Which kernels compute a product. kStream gives every column the bits of reading each weight
// row once per call (decode) -- through a tile where the level's tile gives those bits
// (MatmulKernel::equals_dot); kTiled repacks weight tiles for a cache-tiled kernel where the type
// has one (prefill); kAuto picks by the number of activation rows. Where a tile rounds
// differently the two differ, so a batch-invariant caller fixes one. (Interleaved weights run
// one kernel on every route.)
enum class MatmulRoute : uint8_t { kAuto, kStream, kTiled };

// One output of a grouped product (q|k|v, gate|up): the matrix and where its rows go.
struct MatmulOutput {
  WeightMatrix w;
  float* y;
  size_t y_stride;
};
inline constexpr size_t kMaxMatmulGroup = 8;

enum class RopeMode : uint8_t { kAdjacent, kNeox };  // pairs (2i, 2i+1) or (i, i + n_dims/2)

// RoPE as ggml defines it, with YaRN (ext_factor != 0) and optional per-pair frequency factors.
struct RopeParams {
  RopeMode layout;
  uint32_t n_dims;  // rotated dimensions (even, <= head_dim); the rest pass through
  float freq_base;
  float freq_scale;   // 1 / linear scaling factor
  float ext_factor;   // YaRN extrapolation mix, 0 disables YaRN
  float attn_factor;  // magnitude scale
  float beta_fast;
  float beta_slow;
  uint32_t n_ctx_orig;        // original training context (YaRN)
  const float* freq_factors;  // nullable, n_dims / 2 divisors of theta
};

struct AttentionParams {
  size_t n_heads;
  size_t n_kv_heads;  // divides n_heads (GQA: heads h*g .. h*g+g-1 share KV head h)
  size_t head_dim;
  float scale;    // usually 1/sqrt(head_dim)
  float softcap;  // > 0 enables score soft-capping
  // > 0: sliding window, only the last `window` of the n_keys keys are attended (a query at
  // position p sees keys p - window < t <= p, as Gemma's and Mistral's local layers do).
  size_t window;
  // false: every row sees all its sequence's cached keys (a bidirectional encoder, whose
  // sequences run whole).
  bool causal = true;
};

// How GELU (tanh form) is evaluated: exactly, or through llama.cpp's table of half-precision
// values (ggml's GGML_GELU_FP16), which differs by up to ~1e-3 relative per activation; the
// table is for parity studies against llama.cpp's own outputs.
enum class GeluForm : uint8_t { kTanh, kTanhF16Table };

// The first key a window leaves visible among n_keys (0 without a window).
constexpr size_t first_visible_key(size_t n_keys, size_t window) {
  return window > 0 && n_keys > window ? n_keys - window : 0;
}

}  // namespace synapse
