// SPDX-License-Identifier: Apache-2.0
// The Model IR: a loaded model described as coarse regions (token embedding; per block its
// attention and its feed-forward; the output head) holding ops with their shapes, dtypes,
// weights and the activation values they read and write. An architecture builds it from the
// shared blocks (graph_blocks.h); verify_ir() checks it against a backend before any token
// runs; lower_ir() turns it into the execution plan (plan.h) that names the kernel of every op.
//
// Activations are per-token rows: a "value" is a buffer of rows of a fixed width in floats
// (the residual stream, the q|k|v projections, ...). Ops read and write column ranges of
// values. Ops of the output head and of the last block's feed-forward run only on the rows
// whose logits are wanted (RowSpace::kOutput): the rest of the last block is not needed.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "format/model_file.h"
#include "kernels/kernel_table.h"
#include "model/hparams.h"

namespace synapse {

enum class IrValue : uint8_t {
  kHidden,      // the residual stream (n_embd)
  kNormed,      // a normalized copy of it (n_embd)
  kQkv,         // q | k | v projections
  kAttention,   // attention output, per head (n_head * head_dim_v)
  kGateUp,      // gate | up projections (2 * n_ff)
  kFfn,         // silu(gate) * up (n_ff)
  kOutHidden,   // the residual stream of the rows whose logits are wanted
  kOutNormed,   // its normalized copy
  kLogits,      // n_vocab per output row: the caller's buffer
};
inline constexpr size_t kIrValueCount = 9;
std::string_view ir_value_name(IrValue value);

enum class IrOpKind : uint8_t {
  kEmbed,       // token ids -> rows of the embedding table
  kRmsNorm,     // per row, or per head segment (q/k norms)
  kMatmul,      // one or more weight matrices applied to the same input (q|k|v, gate|up)
  kAddBias,     // rows += bias (biases of the matrices of the preceding matmul)
  kRope,        // rotary embedding of q and k heads
  kKvStore,     // k and v rows into this block's KV cache pages
  kAttention,   // causal attention of q over the cache
  kSwiGlu,      // silu(gate) * up
  kAddResidual, // hidden += projection
  kSelectRows,  // gather the rows whose logits are wanted
};
std::string_view ir_op_name(IrOpKind kind);

enum class RowSpace : uint8_t { kTokens, kOutput };

enum class IrRegionKind : uint8_t { kEmbedding, kAttention, kFeedForward, kOutputHead };
std::string_view ir_region_kind_name(IrRegionKind kind);

// A weight of an op: a tensor of the model file (nullptr view: absent from the file).
struct IrWeight {
  std::string name;
  TensorType type = TensorType::kF32;
  std::vector<uint64_t> shape;  // ggml order: ne[0] (row length) first
  const TensorView* view = nullptr;
};

// A column range of a value.
struct IrSlice {
  IrValue value = IrValue::kHidden;
  uint32_t offset = 0;  // first column (floats)
  uint32_t width = 0;   // columns
};

struct IrOp {
  IrOpKind kind = IrOpKind::kEmbed;
  std::string label;  // what it computes: "q|k|v", "attn_norm", ...
  RowSpace rows = RowSpace::kTokens;
  IrSlice input;
  IrSlice output;  // kAddResidual: the value added to; kKvStore: unused
  std::vector<IrWeight> weights;
  // Attributes, by kind.
  uint32_t n_segments = 1;  // kRmsNorm: segments of input.width / n_segments per row
  float eps = 0.0f;         // kRmsNorm
  uint32_t n_heads = 0;     // kRope: heads rotated; kAttention: query heads
  uint32_t n_kv_heads = 0;  // kAttention, kKvStore
  uint32_t head_dim = 0;    // kRope, kAttention, kKvStore
  uint32_t layer = 0;       // kKvStore, kAttention: which block's cache
  RopeParams rope{};        // kRope (freq_factors resolved at lowering from weights[0], if any)
  float attention_scale = 0.0f;
};

struct IrRegion {
  IrRegionKind kind = IrRegionKind::kEmbedding;
  int32_t block = -1;  // -1 outside the blocks
  std::vector<IrOp> ops;
  std::string name() const;  // "token_embedding", "blk.3.attention", "output_head"
};

struct ModelIr {
  HParams hp;
  uint32_t n_ctx = 0;                             // tokens per sequence this model is run with
  TensorType kv_type = TensorType::kF32;          // the KV cache's element type
  std::array<uint32_t, kIrValueCount> widths{};   // floats per row of each value
  std::vector<IrRegion> regions;

  uint32_t width(IrValue v) const { return widths[static_cast<size_t>(v)]; }
};

}  // namespace synapse
