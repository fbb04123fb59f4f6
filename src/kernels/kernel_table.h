// SPDX-License-Identifier: Apache-2.0
// The one table of kernel function pointers. Each ISA level (scalar reference, AVX2+FMA+F16C,
// AVX-512) fills its own table in its own translation units; `selected_kernels()` picks one
// once, at first use, from the CPU's features (or SYNAPSE_ISA), after the self-check has
// compared it with the reference. Callers hold a `const KernelTable&` and call through it:
// there is no per-op dispatch anywhere else.
//
// Conventions shared by every kernel: matrices are row-major with explicit byte strides; a
// weight row holds k elements of its TensorType; activations are F32 rows, quantized on the fly
// to the weight type's dot partner (activation_type()). Kernels never allocate: scratch comes
// from the caller, sized by the matching *_bytes() query. Kernels are single-threaded; the
// drivers in matmul.h and attention.h split work over a ThreadPool.
//
// The struct is a plain aggregate without default member initializers on purpose: the per-ISA
// translation units only assign its fields, so no constructor or other inline function is ever
// compiled with ISA flags (a weak copy of one could be picked by the linker for baseline code).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "format/tensor_type.h"
#include "ops/op_params.h"

namespace synapse {

enum class IsaLevel : uint8_t { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };
inline constexpr size_t kIsaLevelCount = 3;

std::string_view isa_level_name(IsaLevel level);
std::optional<IsaLevel> isa_level_from_name(std::string_view name);

// The activation format a weight type's quantized dot product takes: Q8_0 for the 32-element
// block types (IQ4_NL included), Q8_K for the K-quants and IQ4_XS, F32 for F32/F16/BF16. (Q4_1/Q5_1
// pair with Q8_0 rather than ggml's Q8_1: the activation sums are computed exactly from the quants
// instead of read from Q8_1's F16-rounded `s`.)
TensorType activation_type(TensorType weight_type);

// One tile of a matrix product: y[c * y_stride + r] = dot(W row r, X column c), r < n_rows,
// c < n_cols, over k elements. W row r starts at w + r * w_stride; X column c at
// x + c * x_stride (both in bytes; X in the format the kernel takes).
struct DotTile {
  const uint8_t* w;
  size_t w_stride;
  size_t n_rows;
  const uint8_t* x;
  size_t x_stride;
  size_t n_cols;
  size_t k;
  float* y;
  size_t y_stride;
};
using DotTileFn = void (*)(const DotTile& tile);

// Transforms one column of quantized activations (activation_type() format, k elements) into the
// layout a kernel reads; prepared_bytes(k) bytes, 64-byte aligned.
using PrepareFn = void (*)(const uint8_t* x, size_t k, uint8_t* prepared);
using PreparedBytesFn = size_t (*)(size_t k);

// Prefill path of one weight type: a tile of at most `rows_per_tile` rows against many columns,
// where the kernel may first repack its rows into `scratch` (tile_scratch_bytes(k) bytes) and
// may want the quantized activations transformed once per column by `prepare` (nullptr: the
// tile reads the activation_type() columns directly; prepared columns are
// prepared_bytes(k) bytes). A nullptr `tile` means: use `dot` for prefill too.
struct MatmulKernel {
  void (*tile)(const DotTile& tile, uint8_t* scratch);
  size_t rows_per_tile;
  size_t (*tile_scratch_bytes)(size_t k);
  PrepareFn prepare;
  PreparedBytesFn prepared_bytes;
  // The tile gives every column the bits `dot` gives it (a prompt's logits equal the same tokens
  // decoded one at a time): the drivers then use it on MatmulRoute::kStream too, which asks for
  // the streamed route's bits, not for its kernel.
  bool equals_dot;
};

// Weights stored interleaved, for a level whose dot products run fastest with several rows side
// by side in one vector (one lane per row): the matrix is rearranged once, when the model is
// loaded (Backend::prepare_matrix), into groups of `rows` rows; a group holds the same bytes as
// its rows (n_rows * row_bytes(type, k) in all), in the level's own order. Every route -- decode,
// batched decode and prefill -- then runs the same kernel on the same layout, so a result never
// depends on the route or the batch. `rows` == 0: the level keeps the type's rows as stored.
struct InterleavedKernels {
  size_t rows;
  // What a product over the rearranged rows equals bit for bit, on every route.
  enum class Bits {
    kReference,  // the scalar reference's product
    kFmaChain,   // per row, acc = fma(w[i], x[i], acc) for i in order from acc = 0 (F32 x)
  };
  Bits bits;
  // Rearranges n_rows rows (a multiple of `rows`; row r at w + r * row_stride) into `out`.
  void (*interleave)(const uint8_t* w, size_t row_stride, size_t n_rows, size_t k, uint8_t* out);
  // When set, every route hands `dot` activation columns transformed by `prepare` (as
  // WeightKernels::dot_prepare); nullptr: the activation_type() columns themselves.
  PrepareFn prepare;
  PreparedBytesFn prepared_bytes;
  // DotTile over interleaved weights: w is the first group of the tile's rows, w_stride is
  // row_bytes(type, k) (a group spans rows * w_stride bytes) and n_rows a multiple of `rows`.
  DotTileFn dot;
  DotTileFn dot_f32;
  // Row `lane` (< rows) of the group at `group`, to F32: the values dequantize() gives for it.
  void (*dequantize_row)(const uint8_t* group, size_t lane, size_t k, float* y);
};

struct WeightKernels {
  // W x activations in activation_type(): the fast path. When dot_prepare is set, the columns
  // go through it first (the kernel reads its own layout of the same values).
  DotTileFn dot;
  PrepareFn dot_prepare;
  PreparedBytesFn dot_prepared_bytes;
  // W x F32 activations: no activation rounding, for exactness.
  DotTileFn dot_f32;
  // One row to F32 (embedding lookup).
  void (*dequantize)(const uint8_t* w, float* y, size_t n);
  // Prefill.
  MatmulKernel matmul;
  // The interleaved layout and its kernels, where this level has one for the type.
  InterleavedKernels interleaved;
};

// Quantizes one F32 row (n a multiple of the block size) into the activation format.
using QuantizeRowFn = void (*)(const float* x, uint8_t* y, size_t n);

struct SoftmaxParams {
  float scale;        // applied to x first
  float softcap;      // > 0: s = softcap * tanh(s / softcap) after scaling
  const float* mask;  // nullable: added after the soft-cap (-inf masks an element)
};

// The KV cache of one sequence, in fixed-size pages: token t lives in page t / page_tokens at
// slot t % page_tokens; a slot holds row_elements elements, the first n_kv_heads * head_dim of
// them the token's heads, so element (t, h, d) is at
// page[t / page_tokens] + (s * row_elements + h * head_dim + d) * element size.
// Pages are read only; several sequences may share them (copy-on-write is the cache's business).
struct KvPages {
  const uint8_t* const* k_pages;
  const uint8_t* const* v_pages;
  size_t page_tokens;
  size_t n_tokens;  // tokens present
  TensorType type;  // F32 or F16
  // Elements per token slot; 0: n_kv_heads * head_dim (slots wider than the heads hold other
  // per-token state of layers without attention, e.g. LFM2's convolution input).
  size_t row_elements;
};

// The elements between consecutive tokens of a page.
constexpr size_t kv_row_elements(const KvPages& kv, size_t n_kv_heads, size_t head_dim) {
  return kv.row_elements != 0 ? kv.row_elements : n_kv_heads * head_dim;
}

// Attention of `n_group` query heads that share one KV head against keys
// [first_visible_key(n_keys, window), n_keys) of it:
// out[g * head_dim + d] = sum_t softmax_t(score(q_g, k_t)) v_t[d], with an online softmax over
// the keys (no score matrix). q and out hold n_group rows of head_dim floats.
using AttendGroupFn = void (*)(const float* q, size_t n_group, const KvPages& kv, size_t kv_head,
                               size_t n_keys, const AttentionParams& params, float* out);

struct KernelTable {
  IsaLevel level;
  const char* variant;  // "scalar", "avx2", "avx2+vnni", "avx512", "avx512+vnni"
  // Indexed by the TensorType id; entries of types without kernels are all nullptr.
  WeightKernels weights[40];
  QuantizeRowFn quantize_q8_0;
  QuantizeRowFn quantize_q8_k;

  void (*rms_norm)(const float* x, const float* weight, size_t n, float eps, float* y);
  void (*layer_norm)(const float* x, const float* weight, const float* bias, size_t n, float eps,
                     float* y);
  void (*softmax)(float* x, size_t n, const SoftmaxParams& params);  // in place
  // Rotates n_heads rows of head_dim floats in place for position `pos`.
  void (*rope)(float* x, size_t n_heads, size_t head_dim, int64_t pos, const RopeParams& params);
  void (*exp)(const float* x, float* y, size_t n);
  void (*silu)(const float* x, float* y, size_t n);
  void (*gelu_tanh)(const float* x, float* y, size_t n);
  void (*gelu_erf)(const float* x, float* y, size_t n);
  void (*swiglu)(const float* gate, const float* up, float* y, size_t n);  // silu(gate) * up
  void (*add)(const float* a, const float* b, float* y, size_t n);
  void (*mul)(const float* a, const float* b, float* y, size_t n);
  void (*scale)(const float* x, float s, float* y, size_t n);
  // y = cap * tanh(x / cap): Gemma 2's final-logit soft-cap. One row of logits per output token,
  // so every level uses the reference.
  void (*softcap)(const float* x, float cap, float* y, size_t n);
  AttendGroupFn attend;
  // Reads n bytes (a multiple of 256, 64-byte aligned) and returns a value depending on all of
  // them: the probe behind `synapse bench memory`.
  uint64_t (*read_bytes)(const uint8_t* p, size_t n);

  const WeightKernels& weight(TensorType type) const {
    return weights[static_cast<uint32_t>(type)];
  }
};

// The table of one level, filled on first use; nullptr when this CPU cannot run that level.
// With `vnni` it is the level's VNNI variant when the CPU has it ("avx2+vnni" with AVX-VNNI,
// "avx512+vnni" with AVX512_VNNI); without, the level's kernels a CPU without VNNI runs.
const KernelTable* kernel_table_for(IsaLevel level, bool vnni = true);
// Every table variant this CPU can run, the reference first (a CPU with AVX-VNNI runs both
// "avx2" and "avx2+vnni"). Tests check each against the reference.
std::span<const KernelTable* const> runnable_kernel_tables();
// The reference table (always available).
const KernelTable& reference_kernels();

}  // namespace synapse
