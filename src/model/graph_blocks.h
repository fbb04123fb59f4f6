// SPDX-License-Identifier: Apache-2.0
// The shared blocks architectures build their IR from: token embedding (optionally scaled),
// pre-norm attention (separate or fused q/k/v, optional biases, per-head q/k RMSNorm, RoPE with
// per-layer base and frequency factors, paged KV, GQA, sliding window, score soft-cap, optional
// post-norm), the gated feed-forward (SwiGLU or GeGLU, separate or fused gate|up, optional
// post-norm), the mixture-of-experts feed-forward, and the output head (final RMSNorm, tied or
// separate projection, optional final soft-cap). Weights are looked up in the model file by
// their GGUF names; a missing one is recorded with a null view and reported by the verifier,
// naming its region and op. Nothing here names an architecture: the options say what differs.
#pragma once

#include <string>

#include "format/model_file.h"
#include "model/ir.h"

namespace synapse {

struct GraphOptions {
  uint32_t n_ctx = 0;  // tokens per sequence
  TensorType kv_type = TensorType::kF32;
  GeluForm gelu = GeluForm::kTanh;  // how kGelu ops evaluate GELU (encoders' feed-forward)
};

struct AttentionBlockOptions {
  bool qkv_bias = false;         // q/k/v biases required (Qwen2)
  bool optional_biases = false;  // q/k/v/output biases used when the file has them (Llama)
  bool qk_norm = false;          // per-head RMSNorm of q and k before RoPE (Qwen3, Gemma 3)
  bool fused_qkv = false;        // one attn_qkv matrix whose rows are q | k | v (Phi-3)
  bool post_norm = false;        // post_attention_norm of the output before the residual (Gemma)
  uint32_t window = 0;           // sliding window in tokens (0: the whole context)
  float softcap = 0.0f;          // attention score soft-cap (Gemma 2)
  float query_scale = 0.0f;      // the score scale; 0: 1/sqrt(head size)
  float rope_freq_base = 0.0f;   // 0: the model's base (Gemma 3's local layers have their own)
  bool rope_unscaled = false;    // ignore the model's RoPE scaling (Gemma 3's local layers)
  // Per-pair RoPE frequency divisors: this tensor ("" : rope_freqs.weight when the file has it).
  std::string rope_factors;
};

enum class GatedActivation : uint8_t { kSwiGlu, kGeGlu };

struct FeedForwardOptions {
  GatedActivation activation = GatedActivation::kSwiGlu;
  bool fused_gate_up = false;  // one ffn_up matrix whose rows are gate | up (Phi-3)
  bool post_norm = false;      // post_ffw_norm of the output before the residual (Gemma)
};

struct MoeBlockOptions {
  bool normalize = true;  // renormalize the chosen experts' weights (Qwen3-MoE's norm_topk_prob)
};

// RoPE as llama.cpp parameterizes it for these hyper-parameters: linear scaling through
// freq_scale, YaRN's extrapolation mix and magnitude correction (attn_factor). freq_factors is
// left null (the lowering points it at the op's frequency-factor weight when it has one).
RopeParams rope_params(const HParams& hp);

class GraphBuilder {
 public:
  GraphBuilder(const HParams& hp, const ModelFile& file, const GraphOptions& options);

  // token_embd rows, times `scale` when it is not 1 (Gemma scales by sqrt(n_embd)).
  void token_embedding(float scale = 1.0f);
  // The attention half of block b: hidden += [post_norm] W_o attention(rope(W_qkv norm(hidden))).
  void attention_block(uint32_t b, const AttentionBlockOptions& options);
  // The feed-forward half: hidden += [post_norm] W_down act(W_gate x, W_up x), x = norm(hidden).
  // The last block's runs on the output rows only (after the rows are selected).
  void feed_forward_block(uint32_t b, const FeedForwardOptions& options);
  // The mixture-of-experts feed-forward: hidden += moe(norm(hidden)).
  void moe_block(uint32_t b, const MoeBlockOptions& options);
  // LFM2's convolution mixer in place of attention: B | C | x = in_proj(norm(hidden)),
  // hidden += out_proj(C * conv(B * x)), conv a causal depthwise convolution over the
  // sequence's positions whose inputs B * x are kept per token in the block's KV pages.
  void short_conv_block(uint32_t b);
  // Final norm (`norm_weight`) and the projection to the vocabulary (output.weight, or
  // token_embd when tied), then logits -> cap * tanh(logits / cap) when final_softcap > 0.
  void output_head(float final_softcap = 0.0f,
                   const std::string& norm_weight = "output_norm.weight");

  // Encoders (BERT's layout; see graph_encoder_blocks.cc). The sum of the token, token-type and
  // learned position embeddings, then LayerNorm (token_embd_norm).
  void summed_embedding();
  // hidden = LayerNorm(hidden + W_o attention(W_qkv hidden + b)) with biases everywhere;
  // attention over the whole sequence unless the model says it is causal.
  void post_norm_attention_block(uint32_t b);
  // hidden = LayerNorm(hidden + W_down gelu(W_up hidden + b) + b).
  void post_norm_feed_forward_block(uint32_t b, GeluForm gelu);
  // No output head: the model answers the final hidden states (the last block's output) only.
  void hidden_state_output();
  // A cross-encoder's classifier on the final hidden state: out(tanh(dense(x))), either part
  // optional (cls.weight|bias, cls.output.weight|bias); at least one must be in the file.
  void classifier_head();

  ModelIr finish() { return std::move(ir_); }

 private:
  IrWeight weight(const std::string& name, std::vector<uint64_t> expected_shape) const;
  bool has(const std::string& name) const { return file_.tensor_view(name) != nullptr; }
  IrRegion& region(IrRegionKind kind, int32_t block);
  // A per-token value the blocks of one kind share (declared by the first block that needs it).
  IrValueId block_value(const char* name, uint32_t width);
  // After the last block's attention only the output rows go on: its feed-forward reads and
  // writes the output-row values.
  bool is_last(uint32_t block) const { return block + 1 == hp_.n_layer; }
  IrOp residual_op(IrValueId from, IrValueId to, RowSpace rows) const;
  // The end of a block's mixer (attention or convolution): hidden += normed; the last block's
  // then selects the output rows for the rest of the model.
  void finish_mixer(IrRegion& r, uint32_t block);
  // q | k | v of block b from `input` in one product (a fused attn_qkv, or the three matrices),
  // then their biases as `biases` says.
  enum class QkvBiases : uint8_t { kNone, kRequired, kIfInFile };
  void qkv_ops(IrRegion& r, uint32_t b, IrSlice input, bool fused, QkvBiases biases);
  // Block b's attention of the q heads (qkv[0, q_dim)) over its cached k, v into `attention`.
  IrOp attention_op(uint32_t b, bool causal, uint32_t window, float softcap, float query_scale);
  // A kKvStore of `input` (its halves as k and v) into block b's pages.
  IrOp kv_store_op(uint32_t b, IrSlice input, uint32_t heads, uint32_t head_dim);
  IrOp norm_op(const char* label, IrSlice in, IrSlice out, const std::string& weight_name);
  // LayerNorm with <prefix>.weight and <prefix>.bias.
  IrOp layer_norm_op(const char* label, IrSlice in, IrSlice out, const std::string& prefix,
                     RowSpace rows);
  // A kMatmul of one weight, then its bias when the file has `<prefix>.bias` (or always when
  // `bias_required`), appended to r.
  void linear(IrRegion& r, const std::string& prefix, IrSlice in, IrSlice out, RowSpace rows,
              bool bias_required);
  // The values and rows a feed-forward of block b reads (hidden) and normalizes into (normed).
  struct FfnFrame {
    IrValueId hidden, normed;
    RowSpace rows;
  };
  FfnFrame ffn_frame(uint32_t b) const;
  // The end of a feed-forward: the optional post-norm of `result`, and hidden += result.
  void finish_ffn(IrRegion& r, uint32_t b, const FfnFrame& f, IrValueId result, bool post_norm);

  const HParams& hp_;
  const ModelFile& file_;
  ModelIr ir_;
  // The values every decoder has (more are declared as blocks need them).
  IrValueId hidden_, normed_, qkv_, attention_, gate_up_, ffn_, out_hidden_, out_normed_;
};

}  // namespace synapse
