// SPDX-License-Identifier: Apache-2.0
// The Model IR: a loaded model as a graph of typed values and ops, grouped in coarse regions
// (token embedding; per block its attention and its feed-forward; the output head). An
// architecture builds it from the shared blocks (graph_blocks.h); verify_ir() checks it against
// a backend before any token runs; lower_ir() turns it into the execution plan (plan.h) that
// names the kernel of every op.
//
// Values are per-token activation rows the builder declares as it needs them: a name, a width
// in floats, and the rows they hold (every token of the step, or only the rows whose logits or
// hidden states are wanted). Ops read and write column ranges of values; each op is one of the
// backend's ops (BackendOp), with its weights and attributes. Ops of the output head and of the
// last block's feed-forward run only on the output rows: the rest of the last block is not
// needed for the others.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "format/model_file.h"
#include "model/hparams.h"
#include "ops/op_params.h"

namespace synapse {

// Which rows a value holds: every token of the step, or the selected output rows (those whose
// logits or final hidden states are wanted). An op may also run on kLogits: only the output
// rows whose logits are wanted (the head after the final hidden state), which it reads compacted
// when some selected rows want only their hidden state.
enum class RowSpace : uint8_t { kTokens, kOutput, kLogits };

// What a kEmbed op looks up per row: the token id, the row's position in its sequence (learned
// absolute positions), or the token type (BERT's segment ids; 0 unless the caller gives them).
enum class EmbedSource : uint8_t { kTokens, kPositions, kTokenTypes };

using IrValueId = uint32_t;

struct IrValueInfo {
  std::string name;    // "hidden", "qkv", ...
  uint32_t width = 0;  // floats per row
  RowSpace rows = RowSpace::kTokens;
};

enum class IrRegionKind : uint8_t {
  kEmbedding,
  kAttention,
  kShortConv,  // a block's convolution mixer, in place of attention (LFM2)
  kFeedForward,
  kOutputHead
};
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
  IrValueId value = 0;
  uint32_t offset = 0;  // first column (floats)
  uint32_t width = 0;   // columns
};

// Mixture-of-experts attributes (kMoe): weights are [router, gate_exps, up_exps, down_exps].
struct IrMoe {
  uint32_t n_expert = 0;
  uint32_t n_used = 0;
  uint32_t n_ff = 0;  // per expert
  bool normalize = true;
};

struct IrOp {
  BackendOp kind = BackendOp::kEmbed;
  std::string label;  // what it computes: "q|k|v", "attn_norm", ...
  RowSpace rows = RowSpace::kTokens;
  IrSlice input;   // kKvStore: k | v (the first and second half are stored per token)
  IrSlice input2;  // kMul: the second factor
  IrSlice output;  // kAdd: the value added to; kKvStore: unused
  std::vector<IrWeight> weights;
  // Attributes, by kind.
  uint32_t n_segments = 1;  // kRmsNorm: segments of input.width / n_segments per row
  float eps = 0.0f;         // kRmsNorm, kLayerNorm (weights: [scale] or [scale, bias])
  EmbedSource embed_source = EmbedSource::kTokens;  // kEmbed
  bool causal = true;               // kAttention: false sees the whole sequence (bidirectional)
  GeluForm gelu = GeluForm::kTanh;  // kGelu
  uint32_t n_heads = 0;             // kRope: heads rotated; kAttention: query heads
  uint32_t n_kv_heads = 0;          // kAttention, kKvStore
  uint32_t head_dim = 0;            // kRope, kAttention, kKvStore
  uint32_t layer = 0;               // kKvStore, kAttention, kShortConv: which block's cache
  uint32_t conv_kernel = 0;         // kShortConv: taps (the weight is [conv_kernel, width])
  RopeParams rope{};  // kRope (freq_factors resolved at lowering from weights[0], if any)
  float attention_scale = 0.0f;  // kAttention
  float softcap = 0.0f;          // kAttention: score soft-cap; kSoftcap: the cap
  uint32_t window = 0;           // kAttention: sliding window (0: the whole context)
  float scale = 1.0f;            // kScale
  IrMoe moe;                     // kMoe
};

struct IrRegion {
  IrRegionKind kind = IrRegionKind::kEmbedding;
  int32_t block = -1;  // -1 outside the blocks
  std::vector<IrOp> ops;
  std::string name() const;  // "token_embedding", "blk.3.attention", "output_head"
};

struct ModelIr {
  HParams hp;
  uint32_t n_ctx = 0;                     // tokens per sequence this model is run with
  TensorType kv_type = TensorType::kF32;  // the KV cache's element type
  std::vector<IrValueInfo> values;
  IrValueId logits = 0;  // n_logits() per output row: the caller's buffer, not allocated
  // The final hidden state (n_embd per output row) that embedding requests pool: the residual
  // stream after the final norm, or after the last block where there is none. The head reads it.
  IrValueId final_hidden = 0;
  // Whether the model has an output head (a decoder's vocabulary projection, a cross-encoder's
  // classifier); an embedding-only encoder has none and answers hidden states only.
  bool has_logits = true;
  // Attention sees the whole sequence: each sequence runs in one step, from position 0.
  bool bidirectional = false;
  // An output-row value of n_embd the output head may use as scratch after the final norm has
  // read it (to compact the rows whose logits are wanted).
  IrValueId head_scratch = 0;
  // Elements per token each layer keeps in its K and in its V region of a KV page: the widest
  // kKvStore's half (the heads, or LFM2's convolution input).
  uint32_t kv_row_elements = 0;
  std::vector<IrRegion> regions;

  uint32_t width(IrValueId v) const { return values.at(v).width; }
  uint32_t n_logits() const { return has_logits ? width(logits) : 0; }
  const std::string& value_name(IrValueId v) const { return values.at(v).name; }
  IrValueId add_value(std::string name, uint32_t width, RowSpace rows = RowSpace::kTokens) {
    values.push_back(IrValueInfo{std::move(name), width, rows});
    return static_cast<IrValueId>(values.size() - 1);
  }
};

}  // namespace synapse
