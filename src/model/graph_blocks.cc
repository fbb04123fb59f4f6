// SPDX-License-Identifier: Apache-2.0
#include "model/graph_blocks.h"

#include <cmath>

#include "model/arch/common.h"

namespace synapse {
namespace {

uint32_t u32(uint64_t v) { return static_cast<uint32_t>(v); }

}  // namespace

RopeParams rope_params(const HParams& hp) {
  RopeParams p{};
  p.layout = hp.rope_layout == RopeLayout::kNeoX ? RopeMode::kNeox : RopeMode::kAdjacent;
  p.n_dims = hp.n_rot;
  p.freq_base = hp.rope_freq_base;
  p.freq_scale = hp.rope_scaling == RopeScaling::kNone ? 1.0f : 1.0f / hp.rope_scaling_factor;
  // llama.cpp (llama-context.cpp): YaRN's extrapolation mix defaults to 1 for YaRN models; its
  // magnitude factor is chosen so that, after ggml's rope multiplies by 1 + 0.1 ln(factor),
  // the net scale is get_mscale(factor) (divided by get_mscale(factor, log_mul) when the file
  // gives a log multiplier), times the file's attn_factor. Float arithmetic, as there.
  p.ext_factor = hp.rope_yarn_ext_factor >= 0.0f
                     ? hp.rope_yarn_ext_factor
                     : (hp.rope_scaling == RopeScaling::kYarn ? 1.0f : 0.0f);
  float attn_factor = 1.0f;
  if (p.ext_factor != 0.0f) {
    const auto mscale = [](float scale, float m) {
      return scale <= 1.0f ? 1.0f : 0.1f * m * std::log(scale) + 1.0f;
    };
    const float factor = 1.0f / p.freq_scale;
    attn_factor = hp.rope_yarn_log_mul != 0.0f
                      ? mscale(factor, 1.0f) / mscale(factor, hp.rope_yarn_log_mul)
                      : mscale(factor, 1.0f);
    attn_factor *= 1.0f / (1.0f + 0.1f * std::log(factor));
  }
  p.attn_factor = attn_factor * hp.rope_attn_factor;
  p.beta_fast = hp.rope_yarn_beta_fast;
  p.beta_slow = hp.rope_yarn_beta_slow;
  p.n_ctx_orig = hp.rope_original_context != 0 ? hp.rope_original_context : hp.n_ctx_train;
  p.freq_factors = nullptr;
  return p;
}

GraphBuilder::GraphBuilder(const HParams& hp, const ModelFile& file, const GraphOptions& options)
    : hp_(hp), file_(file) {
  ir_.hp = hp;
  ir_.n_ctx = options.n_ctx;
  ir_.kv_type = options.kv_type;
  auto set = [this](IrValue v, uint64_t width) { ir_.widths[static_cast<size_t>(v)] = u32(width); };
  set(IrValue::kHidden, hp.n_embd);
  set(IrValue::kNormed, hp.n_embd);
  set(IrValue::kQkv, uint64_t{hp.q_dim()} + hp.k_dim() + hp.v_dim());
  set(IrValue::kAttention, uint64_t{hp.n_head} * hp.head_dim_v);
  set(IrValue::kGateUp, uint64_t{2} * hp.n_ff);
  set(IrValue::kFfn, hp.n_ff);
  set(IrValue::kOutHidden, hp.n_embd);
  set(IrValue::kOutNormed, hp.n_embd);
  set(IrValue::kLogits, hp.n_vocab);
}

IrWeight GraphBuilder::weight(const std::string& name, std::vector<uint64_t> expected_shape) const {
  IrWeight w;
  w.name = name;
  w.view = file_.tensor_view(name);
  if (w.view != nullptr) {
    w.type = w.view->type;
    w.shape.assign(w.view->shape().begin(), w.view->shape().end());
  } else {
    w.shape = std::move(expected_shape);
  }
  return w;
}

IrRegion& GraphBuilder::region(IrRegionKind kind, int32_t block) {
  if (ir_.regions.empty() || ir_.regions.back().kind != kind ||
      ir_.regions.back().block != block) {
    ir_.regions.push_back(IrRegion{kind, block, {}});
  }
  return ir_.regions.back();
}

IrValue GraphBuilder::hidden_of(uint32_t block) const {
  return block + 1 == hp_.n_layer ? IrValue::kOutHidden : IrValue::kHidden;
}

void GraphBuilder::token_embedding() {
  IrOp op;
  op.kind = IrOpKind::kEmbed;
  op.label = "token_embd";
  op.output = {IrValue::kHidden, 0, hp_.n_embd};
  op.weights.push_back(weight("token_embd.weight", {hp_.n_embd, hp_.n_vocab}));
  region(IrRegionKind::kEmbedding, -1).ops.push_back(std::move(op));
}

void GraphBuilder::attention_block(uint32_t b, const AttentionBlockOptions& options) {
  IrRegion& r = region(IrRegionKind::kAttention, static_cast<int32_t>(b));
  const uint32_t d = hp_.n_embd, q = hp_.q_dim(), k = hp_.k_dim(), v = hp_.v_dim();
  const auto name = [b](const char* suffix) { return arch::block_tensor(b, suffix); };

  IrOp norm;
  norm.kind = IrOpKind::kRmsNorm;
  norm.label = "attn_norm";
  norm.input = {IrValue::kHidden, 0, d};
  norm.output = {IrValue::kNormed, 0, d};
  norm.eps = hp_.norm_eps;
  norm.weights.push_back(weight(name("attn_norm.weight"), {d}));
  r.ops.push_back(std::move(norm));

  IrOp qkv;
  qkv.kind = IrOpKind::kMatmul;
  qkv.label = "q|k|v";
  qkv.input = {IrValue::kNormed, 0, d};
  qkv.output = {IrValue::kQkv, 0, q + k + v};
  qkv.weights.push_back(weight(name("attn_q.weight"), {d, q}));
  qkv.weights.push_back(weight(name("attn_k.weight"), {d, k}));
  qkv.weights.push_back(weight(name("attn_v.weight"), {d, v}));
  r.ops.push_back(std::move(qkv));

  const struct {
    const char* tensor;
    uint32_t offset, width;
  } biases[] = {{"attn_q.bias", 0, q}, {"attn_k.bias", q, k}, {"attn_v.bias", q + k, v}};
  for (const auto& bias : biases) {
    if (!options.qkv_bias && !(options.optional_biases && has(name(bias.tensor)))) continue;
    IrOp op;
    op.kind = IrOpKind::kAddBias;
    op.label = bias.tensor;
    op.output = {IrValue::kQkv, bias.offset, bias.width};
    op.weights.push_back(weight(name(bias.tensor), {bias.width}));
    r.ops.push_back(std::move(op));
  }

  if (options.qk_norm) {
    const struct {
      const char* tensor;
      uint32_t offset, heads;
    } norms[] = {{"attn_q_norm.weight", 0, hp_.n_head}, {"attn_k_norm.weight", q, hp_.n_head_kv}};
    for (const auto& n : norms) {
      IrOp op;
      op.kind = IrOpKind::kRmsNorm;
      op.label = n.tensor;
      op.input = {IrValue::kQkv, n.offset, n.heads * hp_.head_dim_k};
      op.output = op.input;
      op.n_segments = n.heads;
      op.eps = hp_.norm_eps;
      op.weights.push_back(weight(name(n.tensor), {hp_.head_dim_k}));
      r.ops.push_back(std::move(op));
    }
  }

  IrOp rope;
  rope.kind = IrOpKind::kRope;
  rope.label = "rope q|k";
  rope.input = {IrValue::kQkv, 0, q + k};  // q and k heads are adjacent: one pass rotates both
  rope.output = rope.input;
  rope.n_heads = hp_.n_head + hp_.n_head_kv;
  rope.head_dim = hp_.head_dim_k;
  rope.rope = rope_params(hp_);
  if (has("rope_freqs.weight")) rope.weights.push_back(weight("rope_freqs.weight", {hp_.n_rot / 2}));
  r.ops.push_back(std::move(rope));

  IrOp store;
  store.kind = IrOpKind::kKvStore;
  store.label = "k,v -> cache";
  store.input = {IrValue::kQkv, q, k + v};
  store.n_kv_heads = hp_.n_head_kv;
  store.head_dim = hp_.head_dim_k;
  store.layer = b;
  r.ops.push_back(std::move(store));

  IrOp attention;
  attention.kind = IrOpKind::kAttention;
  attention.label = "causal attention";
  attention.input = {IrValue::kQkv, 0, q};
  attention.output = {IrValue::kAttention, 0, hp_.n_head * hp_.head_dim_v};
  attention.n_heads = hp_.n_head;
  attention.n_kv_heads = hp_.n_head_kv;
  attention.head_dim = hp_.head_dim_k;
  attention.layer = b;
  attention.attention_scale = 1.0f / std::sqrt(static_cast<float>(hp_.head_dim_k));
  const IrSlice heads = attention.output;
  r.ops.push_back(std::move(attention));

  IrOp out;
  out.kind = IrOpKind::kMatmul;
  out.label = "attn_output";
  out.input = heads;
  out.output = {IrValue::kNormed, 0, d};
  out.weights.push_back(weight(name("attn_output.weight"), {hp_.n_head * hp_.head_dim_v, d}));
  r.ops.push_back(std::move(out));
  if (options.optional_biases && has(name("attn_output.bias"))) {
    IrOp op;
    op.kind = IrOpKind::kAddBias;
    op.label = "attn_output.bias";
    op.output = {IrValue::kNormed, 0, d};
    op.weights.push_back(weight(name("attn_output.bias"), {d}));
    r.ops.push_back(std::move(op));
  }

  IrOp residual;
  residual.kind = IrOpKind::kAddResidual;
  residual.label = "residual";
  residual.input = {IrValue::kNormed, 0, d};
  residual.output = {IrValue::kHidden, 0, d};
  r.ops.push_back(std::move(residual));

  if (b + 1 == hp_.n_layer) {
    // The rest of the model runs only on the rows whose logits are wanted.
    IrOp select;
    select.kind = IrOpKind::kSelectRows;
    select.label = "rows with logits";
    select.input = {IrValue::kHidden, 0, d};
    select.output = {IrValue::kOutHidden, 0, d};
    r.ops.push_back(std::move(select));
  }
}

void GraphBuilder::swiglu_block(uint32_t b) {
  IrRegion& r = region(IrRegionKind::kFeedForward, static_cast<int32_t>(b));
  const uint32_t d = hp_.n_embd, f = hp_.n_ff;
  const auto name = [b](const char* suffix) { return arch::block_tensor(b, suffix); };
  const IrValue hidden = hidden_of(b);
  const bool last = hidden == IrValue::kOutHidden;
  const IrValue normed = last ? IrValue::kOutNormed : IrValue::kNormed;
  const RowSpace rows = last ? RowSpace::kOutput : RowSpace::kTokens;

  IrOp norm;
  norm.kind = IrOpKind::kRmsNorm;
  norm.label = "ffn_norm";
  norm.input = {hidden, 0, d};
  norm.output = {normed, 0, d};
  norm.eps = hp_.norm_eps;
  norm.weights.push_back(weight(name("ffn_norm.weight"), {d}));

  IrOp gate_up;
  gate_up.kind = IrOpKind::kMatmul;
  gate_up.label = "gate|up";
  gate_up.input = norm.output;
  gate_up.output = {IrValue::kGateUp, 0, 2 * f};
  gate_up.weights.push_back(weight(name("ffn_gate.weight"), {d, f}));
  gate_up.weights.push_back(weight(name("ffn_up.weight"), {d, f}));

  IrOp act;
  act.kind = IrOpKind::kSwiGlu;
  act.label = "silu(gate) * up";
  act.input = gate_up.output;
  act.output = {IrValue::kFfn, 0, f};

  IrOp down;
  down.kind = IrOpKind::kMatmul;
  down.label = "ffn_down";
  down.input = act.output;
  down.output = {normed, 0, d};
  down.weights.push_back(weight(name("ffn_down.weight"), {f, d}));

  IrOp residual;
  residual.kind = IrOpKind::kAddResidual;
  residual.label = "residual";
  residual.input = {normed, 0, d};
  residual.output = {hidden, 0, d};

  for (IrOp* op : {&norm, &gate_up, &act, &down, &residual}) {
    op->rows = rows;
    r.ops.push_back(std::move(*op));
  }
}

void GraphBuilder::output_head() {
  IrRegion& r = region(IrRegionKind::kOutputHead, -1);
  const uint32_t d = hp_.n_embd;
  IrOp norm;
  norm.kind = IrOpKind::kRmsNorm;
  norm.label = "output_norm";
  norm.rows = RowSpace::kOutput;
  norm.input = {IrValue::kOutHidden, 0, d};
  norm.output = {IrValue::kOutNormed, 0, d};
  norm.eps = hp_.norm_eps;
  norm.weights.push_back(weight("output_norm.weight", {d}));
  r.ops.push_back(std::move(norm));

  IrOp head;
  head.kind = IrOpKind::kMatmul;
  head.rows = RowSpace::kOutput;
  const bool tied = !has("output.weight");
  head.label = tied ? "output (tied to token_embd)" : "output";
  head.input = {IrValue::kOutNormed, 0, d};
  head.output = {IrValue::kLogits, 0, hp_.n_vocab};
  head.weights.push_back(weight(tied ? "token_embd.weight" : "output.weight", {d, hp_.n_vocab}));
  r.ops.push_back(std::move(head));
}

}  // namespace synapse
