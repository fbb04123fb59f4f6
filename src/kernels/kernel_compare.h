// SPDX-License-Identifier: Apache-2.0
// One harness that runs a kernel of any table against the reference kernel on seeded random
// inputs and reports the worst error as a fraction of its derived tolerance (tolerance.h).
// The start-up self-check runs each family once on small inputs; the tests run them over many
// shapes, seeds and every ISA level the machine has.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/kernel_table.h"
#include "kernels/matmul.h"

namespace synapse {

struct CompareResult {
  double worst_ratio = 0.0;  // max over outputs of |kernel - reference| / tolerance
  size_t n_compared = 0;
  std::string detail;  // where the worst ratio occurred
  bool ok() const { return worst_ratio <= 1.0; }
};

// Weight rows of `type` quantized from random values (rows scaled from 1e-3 to 1e3, a zero row,
// outliers), activations likewise.
CompareResult compare_dot(const KernelTable& kernels, TensorType type, size_t n_rows, size_t n_cols,
                          size_t k, uint64_t seed, DotPath path);
// Through matmul() (quantization, optional packed kernel, threading over `n_threads`).
// interleaved: the weights rearranged by the table's InterleavedKernels first (n_rows a
// multiple of its rows), against the reference over the rows as stored.
CompareResult compare_matmul(const KernelTable& kernels, TensorType type, size_t n_rows,
                             size_t n_cols, size_t k, uint64_t seed, DotPath path, int n_threads,
                             bool interleaved = false);
// Exact: every float bit-identical.
CompareResult compare_dequantize(const KernelTable& kernels, TensorType type, size_t k,
                                 uint64_t seed);
// Exact: every byte identical. act_type is Q8_0 or Q8_K.
CompareResult compare_quantize(const KernelTable& kernels, TensorType act_type, size_t k,
                               uint64_t seed);

enum class OpKind : uint8_t {
  kRmsNorm,
  kLayerNorm,
  kSoftmax,
  kSoftmaxMasked,
  kSoftmaxSoftcap,
  kExp,
  kSilu,
  kGeluTanh,
  kGeluErf,
  kSwiglu,
  kAdd,
  kMul,
  kScale,
  kRopeAdjacent,
  kRopeNeoxYarn,
  kReadBytes,
};
inline constexpr OpKind kAllOps[] = {
    OpKind::kRmsNorm,        OpKind::kLayerNorm,    OpKind::kSoftmax,      OpKind::kSoftmaxMasked,
    OpKind::kSoftmaxSoftcap, OpKind::kExp,          OpKind::kSilu,         OpKind::kGeluTanh,
    OpKind::kGeluErf,        OpKind::kSwiglu,       OpKind::kAdd,          OpKind::kMul,
    OpKind::kScale,          OpKind::kRopeAdjacent, OpKind::kRopeNeoxYarn, OpKind::kReadBytes};
const char* op_name(OpKind op);
CompareResult compare_op(const KernelTable& kernels, OpKind op, size_t n, uint64_t seed);

struct AttentionCase {
  size_t n_heads = 4;
  size_t n_kv_heads = 2;
  size_t head_dim = 64;
  size_t n_keys = 100;
  size_t page_tokens = 16;
  TensorType kv_type = TensorType::kF32;
  float softcap = 0.0f;
  size_t window = 0;       // sliding window (0: none)
  size_t row_padding = 0;  // token slots this many elements wider than the heads
};
CompareResult compare_attention(const KernelTable& kernels, const AttentionCase& c, uint64_t seed);

}  // namespace synapse
