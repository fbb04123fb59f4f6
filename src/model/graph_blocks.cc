// SPDX-License-Identifier: Apache-2.0
#include "model/graph_blocks.h"

#include <algorithm>
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
  hidden_ = ir_.add_value("hidden", hp.n_embd);
  normed_ = ir_.add_value("normed", hp.n_embd);
  qkv_ = ir_.add_value("qkv", u32(uint64_t{hp.q_dim()} + hp.k_dim() + hp.v_dim()));
  attention_ = ir_.add_value("attention", u32(uint64_t{hp.n_head} * hp.head_dim_v));
  gate_up_ = ir_.add_value("gate_up", u32(uint64_t{2} * hp.n_ff));
  ffn_ = ir_.add_value("ffn", hp.n_ff);
  out_hidden_ = ir_.add_value("out_hidden", hp.n_embd, RowSpace::kOutput);
  out_normed_ = ir_.add_value("out_normed", hp.n_embd, RowSpace::kOutput);
  ir_.logits = ir_.add_value("logits", hp.n_vocab, RowSpace::kOutput);
  // Without a final norm (encoders) the final hidden state is the last block's output;
  // output_head() moves it past its norm.
  ir_.final_hidden = out_hidden_;
  ir_.head_scratch = out_normed_;
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
  if (ir_.regions.empty() || ir_.regions.back().kind != kind || ir_.regions.back().block != block) {
    ir_.regions.push_back(IrRegion{kind, block, {}});
  }
  return ir_.regions.back();
}

IrValueId GraphBuilder::block_value(const char* name, uint32_t width) {
  for (IrValueId v = 0; v < ir_.values.size(); ++v) {
    if (ir_.values[v].name == name) return v;
  }
  return ir_.add_value(name, width);
}

IrOp GraphBuilder::norm_op(const char* label, IrSlice in, IrSlice out,
                           const std::string& weight_name) {
  IrOp norm;
  norm.kind = BackendOp::kRmsNorm;
  norm.label = label;
  norm.input = in;
  norm.output = out;
  norm.eps = hp_.norm_eps;
  norm.weights.push_back(weight(weight_name, {in.width}));
  return norm;
}

void GraphBuilder::token_embedding(float scale) {
  IrRegion& r = region(IrRegionKind::kEmbedding, -1);
  IrOp op;
  op.kind = BackendOp::kEmbed;
  op.label = "token_embd";
  op.output = {hidden_, 0, hp_.n_embd};
  op.weights.push_back(weight("token_embd.weight", {hp_.n_embd, hp_.n_vocab}));
  r.ops.push_back(std::move(op));
  if (scale != 1.0f) {
    IrOp scaled;
    scaled.kind = BackendOp::kScale;
    scaled.label = "embedding scale";
    scaled.input = {hidden_, 0, hp_.n_embd};
    scaled.output = scaled.input;
    scaled.scale = scale;
    r.ops.push_back(std::move(scaled));
  }
}

void GraphBuilder::attention_block(uint32_t b, const AttentionBlockOptions& options) {
  IrRegion& r = region(IrRegionKind::kAttention, static_cast<int32_t>(b));
  const uint32_t d = hp_.n_embd, q = hp_.q_dim(), k = hp_.k_dim(), v = hp_.v_dim();
  const auto name = [b](const char* suffix) { return arch::block_tensor(b, suffix); };

  r.ops.push_back(norm_op("attn_norm", {hidden_, 0, d}, {normed_, 0, d}, name("attn_norm.weight")));

  const QkvBiases biases = options.qkv_bias          ? QkvBiases::kRequired
                           : options.optional_biases ? QkvBiases::kIfInFile
                                                     : QkvBiases::kNone;
  qkv_ops(r, b, {normed_, 0, d}, options.fused_qkv, biases);

  if (options.qk_norm) {
    const struct {
      const char* tensor;
      uint32_t offset, heads;
    } norms[] = {{"attn_q_norm.weight", 0, hp_.n_head}, {"attn_k_norm.weight", q, hp_.n_head_kv}};
    for (const auto& n : norms) {
      const IrSlice heads{qkv_, n.offset, n.heads * hp_.head_dim_k};
      IrOp op = norm_op(n.tensor, heads, heads, name(n.tensor));
      op.n_segments = n.heads;
      op.weights = {weight(name(n.tensor), {hp_.head_dim_k})};
      r.ops.push_back(std::move(op));
    }
  }

  IrOp rope;
  rope.kind = BackendOp::kRope;
  rope.label = "rope q|k";
  rope.input = {qkv_, 0, q + k};  // q and k heads are adjacent: one pass rotates both
  rope.output = rope.input;
  rope.n_heads = hp_.n_head + hp_.n_head_kv;
  rope.head_dim = hp_.head_dim_k;
  rope.rope = rope_params(hp_);
  if (options.rope_freq_base > 0.0f) rope.rope.freq_base = options.rope_freq_base;
  if (options.rope_unscaled) {
    rope.rope.freq_scale = 1.0f;
    rope.rope.ext_factor = 0.0f;
    rope.rope.attn_factor = 1.0f;
  }
  const std::string factors =
      options.rope_factors.empty()
          ? (has("rope_freqs.weight") ? std::string("rope_freqs.weight") : std::string())
          : options.rope_factors;
  if (!factors.empty()) rope.weights.push_back(weight(factors, {hp_.n_rot / 2}));
  r.ops.push_back(std::move(rope));

  r.ops.push_back(kv_store_op(b, {qkv_, q, k + v}, hp_.n_head_kv, hp_.head_dim_k));

  IrOp attention =
      attention_op(b, /*causal=*/true, options.window, options.softcap, options.query_scale);
  const IrSlice heads = attention.output;
  r.ops.push_back(std::move(attention));

  IrOp out;
  out.kind = BackendOp::kMatmul;
  out.label = "attn_output";
  out.input = heads;
  out.output = {normed_, 0, d};
  out.weights.push_back(weight(name("attn_output.weight"), {hp_.n_head * hp_.head_dim_v, d}));
  r.ops.push_back(std::move(out));
  if (options.optional_biases && has(name("attn_output.bias"))) {
    IrOp op;
    op.kind = BackendOp::kAddBias;
    op.label = "attn_output.bias";
    op.output = {normed_, 0, d};
    op.weights.push_back(weight(name("attn_output.bias"), {d}));
    r.ops.push_back(std::move(op));
  }
  if (options.post_norm) {
    r.ops.push_back(norm_op("post_attention_norm", {normed_, 0, d}, {normed_, 0, d},
                            name("post_attention_norm.weight")));
  }

  finish_mixer(r, b);
}

void GraphBuilder::qkv_ops(IrRegion& r, uint32_t b, IrSlice input, bool fused, QkvBiases biases) {
  const uint32_t d = input.width, q = hp_.q_dim(), k = hp_.k_dim(), v = hp_.v_dim();
  const auto name = [b](const char* suffix) { return arch::block_tensor(b, suffix); };
  IrOp qkv;
  qkv.kind = BackendOp::kMatmul;
  qkv.label = "q|k|v";
  qkv.input = input;
  qkv.output = {qkv_, 0, q + k + v};
  if (fused) {
    qkv.weights.push_back(weight(name("attn_qkv.weight"), {d, uint64_t{q} + k + v}));
  } else {
    qkv.weights.push_back(weight(name("attn_q.weight"), {d, q}));
    qkv.weights.push_back(weight(name("attn_k.weight"), {d, k}));
    qkv.weights.push_back(weight(name("attn_v.weight"), {d, v}));
  }
  r.ops.push_back(std::move(qkv));
  const struct {
    const char* tensor;
    uint32_t offset, width;
  } slices[] = {{"attn_q.bias", 0, q}, {"attn_k.bias", q, k}, {"attn_v.bias", q + k, v}};
  for (const auto& bias : slices) {
    if (biases == QkvBiases::kNone || (biases == QkvBiases::kIfInFile && !has(name(bias.tensor)))) {
      continue;
    }
    IrOp op;
    op.kind = BackendOp::kAddBias;
    op.label = bias.tensor;
    op.output = {qkv_, bias.offset, bias.width};
    op.weights.push_back(weight(name(bias.tensor), {bias.width}));
    r.ops.push_back(std::move(op));
  }
}

IrOp GraphBuilder::attention_op(uint32_t b, bool causal, uint32_t window, float softcap,
                                float query_scale) {
  IrOp attention;
  attention.kind = BackendOp::kAttention;
  attention.label = std::string(causal ? "causal attention" : "bidirectional attention") +
                    (window > 0 ? ", window " + std::to_string(window) : std::string());
  attention.causal = causal;
  attention.input = {qkv_, 0, hp_.q_dim()};
  attention.output = {attention_, 0, hp_.n_head * hp_.head_dim_v};
  attention.n_heads = hp_.n_head;
  attention.n_kv_heads = hp_.n_head_kv;
  attention.head_dim = hp_.head_dim_k;
  attention.layer = b;
  attention.attention_scale =
      query_scale > 0.0f ? query_scale : 1.0f / std::sqrt(static_cast<float>(hp_.head_dim_k));
  attention.softcap = softcap;
  attention.window = window;
  return attention;
}

IrOp GraphBuilder::kv_store_op(uint32_t b, IrSlice input, uint32_t heads, uint32_t head_dim) {
  IrOp store;
  store.kind = BackendOp::kKvStore;
  store.label = heads > 0 ? "k,v -> cache" : "conv input -> cache";
  store.input = input;
  store.n_kv_heads = heads;
  store.head_dim = head_dim;
  store.layer = b;
  ir_.kv_row_elements = std::max(ir_.kv_row_elements, input.width / 2);
  return store;
}

IrOp GraphBuilder::residual_op(IrValueId from, IrValueId to, RowSpace rows) const {
  IrOp residual;
  residual.kind = BackendOp::kAdd;
  residual.label = "residual";
  residual.rows = rows;
  residual.input = {from, 0, hp_.n_embd};
  residual.output = {to, 0, hp_.n_embd};
  return residual;
}

void GraphBuilder::finish_mixer(IrRegion& r, uint32_t b) {
  r.ops.push_back(residual_op(normed_, hidden_, RowSpace::kTokens));
  if (!is_last(b)) return;
  // The rest of the model runs only on the rows whose logits are wanted.
  IrOp select;
  select.kind = BackendOp::kCopyRows;
  select.label = "rows with logits";
  select.input = {hidden_, 0, hp_.n_embd};
  select.output = {out_hidden_, 0, hp_.n_embd};
  r.ops.push_back(std::move(select));
}

void GraphBuilder::short_conv_block(uint32_t b) {
  IrRegion& r = region(IrRegionKind::kShortConv, static_cast<int32_t>(b));
  const uint32_t d = hp_.n_embd;
  const auto name = [b](const char* suffix) { return arch::block_tensor(b, suffix); };
  const IrValueId conv_in = block_value("conv_in", 3 * d);
  const IrValueId conv_bx = block_value("conv_bx", d);
  const IrValueId conv_out = block_value("conv_out", d);

  r.ops.push_back(norm_op("attn_norm", {hidden_, 0, d}, {normed_, 0, d}, name("attn_norm.weight")));

  IrOp in_proj;
  in_proj.kind = BackendOp::kMatmul;
  in_proj.label = "B|C|x";
  in_proj.input = {normed_, 0, d};
  in_proj.output = {conv_in, 0, 3 * d};
  in_proj.weights.push_back(weight(name("shortconv.in_proj.weight"), {d, uint64_t{3} * d}));
  r.ops.push_back(std::move(in_proj));

  IrOp bx;
  bx.kind = BackendOp::kMul;
  bx.label = "B * x";
  bx.input = {conv_in, 0, d};
  bx.input2 = {conv_in, 2 * d, d};
  bx.output = {conv_bx, 0, d};
  r.ops.push_back(std::move(bx));

  r.ops.push_back(kv_store_op(b, {conv_bx, 0, d}, 0, 0));

  IrOp conv;
  conv.kind = BackendOp::kShortConv;
  conv.label = "causal conv, " + std::to_string(hp_.conv_kernel) + " taps";
  conv.output = {conv_out, 0, d};
  conv.layer = b;
  conv.conv_kernel = hp_.conv_kernel;
  conv.weights.push_back(weight(name("shortconv.conv.weight"), {hp_.conv_kernel, d}));
  r.ops.push_back(std::move(conv));

  IrOp cy;
  cy.kind = BackendOp::kMul;
  cy.label = "C * conv";
  cy.input = {conv_in, d, d};
  cy.input2 = {conv_out, 0, d};
  cy.output = {conv_bx, 0, d};
  r.ops.push_back(std::move(cy));

  IrOp out_proj;
  out_proj.kind = BackendOp::kMatmul;
  out_proj.label = "out_proj";
  out_proj.input = {conv_bx, 0, d};
  out_proj.output = {normed_, 0, d};
  out_proj.weights.push_back(weight(name("shortconv.out_proj.weight"), {d, d}));
  r.ops.push_back(std::move(out_proj));

  finish_mixer(r, b);
}

GraphBuilder::FfnFrame GraphBuilder::ffn_frame(uint32_t b) const {
  if (is_last(b)) return {out_hidden_, out_normed_, RowSpace::kOutput};
  return {hidden_, normed_, RowSpace::kTokens};
}

void GraphBuilder::finish_ffn(IrRegion& r, uint32_t b, const FfnFrame& f, IrValueId result,
                              bool post_norm) {
  const uint32_t d = hp_.n_embd;
  if (post_norm) {
    IrOp norm = norm_op("post_ffw_norm", {result, 0, d}, {result, 0, d},
                        arch::block_tensor(b, "post_ffw_norm.weight"));
    norm.rows = f.rows;
    r.ops.push_back(std::move(norm));
  }
  r.ops.push_back(residual_op(result, f.hidden, f.rows));
}

void GraphBuilder::feed_forward_block(uint32_t b, const FeedForwardOptions& options) {
  IrRegion& r = region(IrRegionKind::kFeedForward, static_cast<int32_t>(b));
  const uint32_t d = hp_.n_embd, f = hp_.n_ff;
  const auto name = [b](const char* suffix) { return arch::block_tensor(b, suffix); };
  const FfnFrame frame = ffn_frame(b);

  IrOp norm =
      norm_op("ffn_norm", {frame.hidden, 0, d}, {frame.normed, 0, d}, name("ffn_norm.weight"));

  IrOp gate_up;
  gate_up.kind = BackendOp::kMatmul;
  gate_up.label = "gate|up";
  gate_up.input = norm.output;
  gate_up.output = {gate_up_, 0, 2 * f};
  if (options.fused_gate_up) {
    gate_up.weights.push_back(weight(name("ffn_up.weight"), {d, uint64_t{2} * f}));
  } else {
    gate_up.weights.push_back(weight(name("ffn_gate.weight"), {d, f}));
    gate_up.weights.push_back(weight(name("ffn_up.weight"), {d, f}));
  }

  IrOp act;
  const bool geglu = options.activation == GatedActivation::kGeGlu;
  act.kind = geglu ? BackendOp::kGeGlu : BackendOp::kSwiGlu;
  act.label = geglu ? "gelu(gate) * up" : "silu(gate) * up";
  act.input = gate_up.output;
  act.output = {ffn_, 0, f};

  IrOp down;
  down.kind = BackendOp::kMatmul;
  down.label = "ffn_down";
  down.input = act.output;
  down.output = {frame.normed, 0, d};
  down.weights.push_back(weight(name("ffn_down.weight"), {f, d}));

  for (IrOp* op : {&norm, &gate_up, &act, &down}) {
    op->rows = frame.rows;
    r.ops.push_back(std::move(*op));
  }
  finish_ffn(r, b, frame, frame.normed, options.post_norm);
}

void GraphBuilder::moe_block(uint32_t b, const MoeBlockOptions& options) {
  IrRegion& r = region(IrRegionKind::kFeedForward, static_cast<int32_t>(b));
  const uint32_t d = hp_.n_embd, f = hp_.n_ff_expert, n = hp_.n_expert;
  const auto name = [b](const char* suffix) { return arch::block_tensor(b, suffix); };
  const FfnFrame frame = ffn_frame(b);

  IrOp norm =
      norm_op("ffn_norm", {frame.hidden, 0, d}, {frame.normed, 0, d}, name("ffn_norm.weight"));
  norm.rows = frame.rows;
  r.ops.push_back(std::move(norm));

  // The experts' sum goes to a value of its own (the op reads `normed` while writing).
  const IrValueId moe_out = block_value("moe", d);

  IrOp moe;
  moe.kind = BackendOp::kMoe;
  moe.label = "top-" + std::to_string(hp_.n_expert_used) + " of " + std::to_string(n) + " experts";
  moe.rows = frame.rows;
  moe.input = {frame.normed, 0, d};
  moe.output = {moe_out, 0, d};
  moe.weights.push_back(weight(name("ffn_gate_inp.weight"), {d, n}));
  moe.weights.push_back(weight(name("ffn_gate_exps.weight"), {d, f, n}));
  moe.weights.push_back(weight(name("ffn_up_exps.weight"), {d, f, n}));
  moe.weights.push_back(weight(name("ffn_down_exps.weight"), {f, d, n}));
  moe.moe = IrMoe{n, hp_.n_expert_used, f, options.normalize};
  r.ops.push_back(std::move(moe));

  finish_ffn(r, b, frame, moe_out, false);
}

void GraphBuilder::output_head(float final_softcap, const std::string& norm_weight) {
  IrRegion& r = region(IrRegionKind::kOutputHead, -1);
  const uint32_t d = hp_.n_embd;
  IrOp norm = norm_op("output_norm", {out_hidden_, 0, d}, {out_normed_, 0, d}, norm_weight);
  norm.rows = RowSpace::kOutput;
  r.ops.push_back(std::move(norm));

  ir_.final_hidden = out_normed_;
  ir_.head_scratch = out_hidden_;  // consumed by the final norm

  IrOp head;
  head.kind = BackendOp::kMatmul;
  head.rows = RowSpace::kLogits;
  const bool tied = !has("output.weight");
  head.label = tied ? "output (tied to token_embd)" : "output";
  head.input = {out_normed_, 0, d};
  head.output = {ir_.logits, 0, hp_.n_vocab};
  head.weights.push_back(weight(tied ? "token_embd.weight" : "output.weight", {d, hp_.n_vocab}));
  r.ops.push_back(std::move(head));

  if (final_softcap > 0.0f) {
    IrOp cap;
    cap.kind = BackendOp::kSoftcap;
    cap.label = "final soft-cap";
    cap.rows = RowSpace::kLogits;
    cap.input = {ir_.logits, 0, hp_.n_vocab};
    cap.output = cap.input;
    cap.softcap = final_softcap;
    r.ops.push_back(std::move(cap));
  }
}

}  // namespace synapse
