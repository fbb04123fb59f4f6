// SPDX-License-Identifier: Apache-2.0
// The GraphBuilder's encoder blocks: summed token/type/position embeddings, post-LayerNorm
// blocks with biases and bidirectional attention, and the two ways an encoder ends (hidden
// states only, or a classifier). Kept apart from the decoder blocks (graph_blocks.cc), which
// share the values, the row selection and the KV store with them.
#include <cmath>

#include "model/arch/common.h"
#include "model/graph_blocks.h"

namespace synapse {

IrOp GraphBuilder::layer_norm_op(const char* label, IrSlice in, IrSlice out,
                                 const std::string& prefix, RowSpace rows) {
  IrOp norm;
  norm.kind = BackendOp::kLayerNorm;
  norm.label = label;
  norm.rows = rows;
  norm.input = in;
  norm.output = out;
  norm.eps = hp_.norm_eps;
  norm.weights.push_back(weight(prefix + ".weight", {in.width}));
  norm.weights.push_back(weight(prefix + ".bias", {in.width}));
  return norm;
}

void GraphBuilder::linear(IrRegion& r, const std::string& prefix, IrSlice in, IrSlice out,
                          RowSpace rows, bool bias_required) {
  IrOp m;
  m.kind = BackendOp::kMatmul;
  m.label = prefix;
  m.rows = rows;
  m.input = in;
  m.output = out;
  m.weights.push_back(weight(prefix + ".weight", {in.width, out.width}));
  r.ops.push_back(std::move(m));
  if (!bias_required && !has(prefix + ".bias")) return;
  IrOp bias;
  bias.kind = BackendOp::kAddBias;
  bias.label = prefix + ".bias";
  bias.rows = rows;
  bias.output = out;
  bias.weights.push_back(weight(prefix + ".bias", {out.width}));
  r.ops.push_back(std::move(bias));
}

void GraphBuilder::summed_embedding() {
  IrRegion& r = region(IrRegionKind::kEmbedding, -1);
  const uint32_t d = hp_.n_embd;
  const struct {
    const char* tensor;
    EmbedSource source;
    uint64_t rows;
  } tables[] = {{"token_embd.weight", EmbedSource::kTokens, hp_.n_vocab},
                {"token_types.weight", EmbedSource::kTokenTypes, hp_.n_token_types},
                {"position_embd.weight", EmbedSource::kPositions, hp_.n_ctx_train}};
  // hidden = token; then (token + type) + position, llama.cpp's order of additions.
  for (const auto& t : tables) {
    IrOp embed;
    embed.kind = BackendOp::kEmbed;
    embed.label = t.tensor;
    embed.embed_source = t.source;
    embed.output = {t.source == EmbedSource::kTokens ? hidden_ : normed_, 0, d};
    embed.weights.push_back(weight(t.tensor, {d, t.rows}));
    r.ops.push_back(std::move(embed));
    if (t.source != EmbedSource::kTokens) {
      r.ops.push_back(residual_op(normed_, hidden_, RowSpace::kTokens));
      r.ops.back().label = "sum of embeddings";
    }
  }
  r.ops.push_back(layer_norm_op("token_embd_norm", {hidden_, 0, d}, {hidden_, 0, d},
                                "token_embd_norm", RowSpace::kTokens));
}

void GraphBuilder::post_norm_attention_block(uint32_t b) {
  IrRegion& r = region(IrRegionKind::kAttention, static_cast<int32_t>(b));
  const uint32_t d = hp_.n_embd, q = hp_.q_dim(), k = hp_.k_dim(), v = hp_.v_dim();
  const auto name = [b](const char* suffix) { return arch::block_tensor(b, suffix); };
  ir_.bidirectional = !hp_.causal;

  qkv_ops(r, b, {hidden_, 0, d}, /*fused=*/false, QkvBiases::kRequired);
  r.ops.push_back(kv_store_op(b, {qkv_, q, k + v}, hp_.n_head_kv, hp_.head_dim_k));

  IrOp attention = attention_op(b, hp_.causal, 0, 0.0f, 0.0f);
  const IrSlice heads = attention.output;
  r.ops.push_back(std::move(attention));

  linear(r, name("attn_output"), heads, {normed_, 0, d}, RowSpace::kTokens, true);
  r.ops.push_back(residual_op(normed_, hidden_, RowSpace::kTokens));
  r.ops.push_back(layer_norm_op("attn_output_norm", {hidden_, 0, d}, {hidden_, 0, d},
                                name("attn_output_norm"), RowSpace::kTokens));
  if (!is_last(b)) return;
  // Attention was the last step that needs every row: the rest runs on the output rows.
  IrOp select;
  select.kind = BackendOp::kCopyRows;
  select.label = "output rows";
  select.input = {hidden_, 0, d};
  select.output = {out_hidden_, 0, d};
  r.ops.push_back(std::move(select));
}

void GraphBuilder::post_norm_feed_forward_block(uint32_t b, GeluForm gelu) {
  IrRegion& r = region(IrRegionKind::kFeedForward, static_cast<int32_t>(b));
  const uint32_t d = hp_.n_embd, f = hp_.n_ff;
  const auto name = [b](const char* suffix) { return arch::block_tensor(b, suffix); };
  const FfnFrame frame = ffn_frame(b);

  linear(r, name("ffn_up"), {frame.hidden, 0, d}, {ffn_, 0, f}, frame.rows, true);
  IrOp act;
  act.kind = BackendOp::kGelu;
  act.label = gelu == GeluForm::kTanhF16Table ? "gelu (llama.cpp's F16 table)" : "gelu";
  act.rows = frame.rows;
  act.input = {ffn_, 0, f};
  act.output = act.input;
  act.gelu = gelu;
  r.ops.push_back(std::move(act));
  linear(r, name("ffn_down"), {ffn_, 0, f}, {frame.normed, 0, d}, frame.rows, true);
  r.ops.push_back(residual_op(frame.normed, frame.hidden, frame.rows));
  r.ops.push_back(layer_norm_op("layer_output_norm", {frame.hidden, 0, d}, {frame.hidden, 0, d},
                                name("layer_output_norm"), frame.rows));
}

// The final hidden state is the last block's output (the builder's default): no head reads it.
void GraphBuilder::hidden_state_output() { ir_.has_logits = false; }

void GraphBuilder::classifier_head() {
  IrRegion& r = region(IrRegionKind::kOutputHead, -1);
  const uint32_t d = hp_.n_embd;
  IrSlice x{ir_.final_hidden, 0, d};  // the last block's output (no final norm)
  const bool dense = has("cls.weight");
  const bool out = has("cls.output.weight");
  const uint32_t labels =
      out ? static_cast<uint32_t>(file_.tensor_view("cls.output.weight")->dims[1]) : d;
  ir_.values[ir_.logits].width = labels;
  if (dense || !out) {  // neither: the missing cls.weight is reported by the verifier
    const IrSlice y = out ? IrSlice{ir_.add_value("pooled", d, RowSpace::kOutput), 0, d}
                          : IrSlice{ir_.logits, 0, d};
    linear(r, "cls", x, y, RowSpace::kLogits, false);
    IrOp tanh;  // tanh(x) = 1 * tanh(x / 1) exactly: the soft-cap op with cap 1
    tanh.kind = BackendOp::kSoftcap;
    tanh.label = "tanh";
    tanh.rows = RowSpace::kLogits;
    tanh.input = y;
    tanh.output = y;
    tanh.softcap = 1.0f;
    r.ops.push_back(std::move(tanh));
    x = y;
  }
  if (out) linear(r, "cls.output", x, {ir_.logits, 0, labels}, RowSpace::kLogits, false);
}

}  // namespace synapse
