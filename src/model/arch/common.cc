// SPDX-License-Identifier: Apache-2.0
#include "model/arch/common.h"

#include <algorithm>
#include <cmath>

#include "format/gguf/gguf_keys.h"
#include "model/graph_blocks.h"

namespace synapse::arch {
namespace {

using gguf_key::arch_key;

// Generous bounds: ten times today's largest models, far below where sizes could overflow.
constexpr uint32_t kMaxVocab = 1u << 24;
constexpr uint32_t kMaxContext = 1u << 24;
constexpr uint32_t kMaxEmbedding = 1u << 20;
constexpr uint32_t kMaxFeedForward = 1u << 22;
constexpr uint32_t kMaxBlocks = 1u << 12;
constexpr uint32_t kMaxHeads = 1u << 12;
constexpr uint32_t kMaxHeadDim = 1u << 12;

Status bad(std::string_view key_suffix, const HParams& hp, std::string message) {
  return Status(ErrorCode::kBadValue, std::move(message),
                ErrorWhere{.key = arch_key(hp.arch, key_suffix)});
}

Status check_range(std::string_view key_suffix, const HParams& hp, uint64_t value, uint64_t max) {
  if (value == 0 || value > max) {
    return bad(key_suffix, hp,
               "value " + std::to_string(value) + " outside 1.." + std::to_string(max));
  }
  return ok_status();
}

}  // namespace

std::string block_tensor(uint32_t block, std::string_view suffix) {
  std::string name = "blk." + std::to_string(block) + ".";
  name += suffix;
  return name;
}

Status read_common_hparams(const GgufMetadata& md, std::string_view arch, HParams& hp) {
  hp.arch = std::string(arch);
  // Converters write <arch>.vocab_size only sometimes; the token list is always there.
  if (md.contains(arch_key(arch, gguf_key::kVocabSize))) {
    SYN_ASSIGN_OR_RETURN(hp.n_vocab, md.get_u32(arch_key(arch, gguf_key::kVocabSize)));
  } else {
    SYN_ASSIGN_OR_RETURN(const auto tokens, md.get_string_array(gguf_key::kTokenizerTokens));
    if (tokens.size() > kMaxVocab) {
      return Status(ErrorCode::kBadValue, "vocabulary larger than " + std::to_string(kMaxVocab),
                    ErrorWhere{.key = std::string(gguf_key::kTokenizerTokens)});
    }
    hp.n_vocab = static_cast<uint32_t>(tokens.size());
  }
  SYN_ASSIGN_OR_RETURN(hp.n_ctx_train, md.get_u32(arch_key(arch, gguf_key::kContextLength)));
  SYN_ASSIGN_OR_RETURN(hp.n_embd, md.get_u32(arch_key(arch, gguf_key::kEmbeddingLength)));
  SYN_ASSIGN_OR_RETURN(hp.n_ff, md.get_u32(arch_key(arch, gguf_key::kFeedForwardLength)));
  SYN_ASSIGN_OR_RETURN(hp.n_layer, md.get_u32(arch_key(arch, gguf_key::kBlockCount)));
  SYN_ASSIGN_OR_RETURN(hp.n_head, md.get_u32(arch_key(arch, gguf_key::kHeadCount)));
  const std::string kv_key = arch_key(arch, gguf_key::kHeadCountKv);
  if (Result<std::vector<int32_t>> per_layer = md.get_i32_array(kv_key); per_layer.ok()) {
    // One count per layer (LFM2): n_head_kv is the largest; each layer has it or none.
    hp.n_head_kv = 0;
    for (int32_t n : *per_layer) {
      if (n < 0) return bad(gguf_key::kHeadCountKv, hp, "negative KV head count");
      hp.n_head_kv = std::max(hp.n_head_kv, static_cast<uint32_t>(n));
      hp.layer_n_head_kv.push_back(static_cast<uint32_t>(n));
    }
    for (uint32_t n : hp.layer_n_head_kv) {
      if (n != 0 && n != hp.n_head_kv) {
        return bad(gguf_key::kHeadCountKv, hp, "layers with different non-zero KV head counts");
      }
    }
  } else {
    SYN_ASSIGN_OR_RETURN(hp.n_head_kv, md.get_u32_or(kv_key, hp.n_head));
  }
  if (hp.n_head == 0) return bad(gguf_key::kHeadCount, hp, "head count is zero");
  const uint32_t default_head_dim = hp.n_embd / hp.n_head;
  hp.head_dim_explicit = md.contains(arch_key(arch, gguf_key::kKeyLength));
  SYN_ASSIGN_OR_RETURN(hp.head_dim_k,
                       md.get_u32_or(arch_key(arch, gguf_key::kKeyLength), default_head_dim));
  SYN_ASSIGN_OR_RETURN(hp.head_dim_v,
                       md.get_u32_or(arch_key(arch, gguf_key::kValueLength), hp.head_dim_k));
  return ok_status();
}

Status read_rope_hparams(const GgufMetadata& md, std::string_view arch, HParams& hp) {
  SYN_ASSIGN_OR_RETURN(hp.n_rot,
                       md.get_u32_or(arch_key(arch, gguf_key::kRopeDimensionCount), hp.head_dim_k));
  SYN_ASSIGN_OR_RETURN(hp.rope_freq_base,
                       md.get_f32_or(arch_key(arch, gguf_key::kRopeFreqBase), hp.rope_freq_base));
  SYN_ASSIGN_OR_RETURN(const std::string_view scaling,
                       md.get_string_or(arch_key(arch, gguf_key::kRopeScalingType), "none"));
  if (scaling == "none") {
    hp.rope_scaling = RopeScaling::kNone;
  } else if (scaling == "linear") {
    hp.rope_scaling = RopeScaling::kLinear;
  } else if (scaling == "yarn") {
    hp.rope_scaling = RopeScaling::kYarn;
  } else {
    return Status(ErrorCode::kUnsupported,
                  "RoPE scaling type '" + std::string(scaling) + "' is not supported",
                  ErrorWhere{.key = arch_key(arch, gguf_key::kRopeScalingType)});
  }
  SYN_ASSIGN_OR_RETURN(hp.rope_scaling_factor,
                       md.get_f32_or(arch_key(arch, gguf_key::kRopeScalingFactor), 1.0f));
  SYN_ASSIGN_OR_RETURN(
      hp.rope_original_context,
      md.get_u32_or(arch_key(arch, gguf_key::kRopeScalingOriginalContext), hp.n_ctx_train));
  SYN_ASSIGN_OR_RETURN(hp.rope_attn_factor,
                       md.get_f32_or(arch_key(arch, gguf_key::kRopeScalingAttnFactor), 1.0f));
  SYN_ASSIGN_OR_RETURN(hp.rope_yarn_log_mul,
                       md.get_f32_or(arch_key(arch, gguf_key::kRopeScalingYarnLogMul), 0.0f));
  SYN_ASSIGN_OR_RETURN(hp.rope_yarn_ext_factor,
                       md.get_f32_or(arch_key(arch, gguf_key::kRopeScalingYarnExtFactor), -1.0f));
  SYN_ASSIGN_OR_RETURN(hp.rope_yarn_beta_fast,
                       md.get_f32_or(arch_key(arch, gguf_key::kRopeScalingYarnBetaFast), 32.0f));
  SYN_ASSIGN_OR_RETURN(hp.rope_yarn_beta_slow,
                       md.get_f32_or(arch_key(arch, gguf_key::kRopeScalingYarnBetaSlow), 1.0f));
  return ok_status();
}

Status validate_hparams(const HParams& hp) {
  SYN_RETURN_IF_ERROR(check_range(gguf_key::kVocabSize, hp, hp.n_vocab, kMaxVocab));
  SYN_RETURN_IF_ERROR(check_range(gguf_key::kContextLength, hp, hp.n_ctx_train, kMaxContext));
  SYN_RETURN_IF_ERROR(check_range(gguf_key::kEmbeddingLength, hp, hp.n_embd, kMaxEmbedding));
  SYN_RETURN_IF_ERROR(check_range(gguf_key::kFeedForwardLength, hp, hp.n_ff, kMaxFeedForward));
  SYN_RETURN_IF_ERROR(check_range(gguf_key::kBlockCount, hp, hp.n_layer, kMaxBlocks));
  SYN_RETURN_IF_ERROR(check_range(gguf_key::kHeadCount, hp, hp.n_head, kMaxHeads));
  SYN_RETURN_IF_ERROR(check_range(gguf_key::kHeadCountKv, hp, hp.n_head_kv, kMaxHeads));
  SYN_RETURN_IF_ERROR(check_range(gguf_key::kKeyLength, hp, hp.head_dim_k, kMaxHeadDim));
  SYN_RETURN_IF_ERROR(check_range(gguf_key::kValueLength, hp, hp.head_dim_v, kMaxHeadDim));
  if (!hp.layer_n_head_kv.empty() && hp.layer_n_head_kv.size() != hp.n_layer) {
    return bad(gguf_key::kHeadCountKv, hp,
               std::to_string(hp.layer_n_head_kv.size()) + " per-layer KV head counts for " +
                   std::to_string(hp.n_layer) + " blocks");
  }
  if (hp.n_head % hp.n_head_kv != 0) {
    return bad(gguf_key::kHeadCountKv, hp,
               std::to_string(hp.n_head) + " heads are not a multiple of " +
                   std::to_string(hp.n_head_kv) + " KV heads");
  }
  if (hp.rope_layout != RopeLayout::kNone) {
    if (hp.n_rot == 0 || hp.n_rot > hp.head_dim_k || hp.n_rot % 2 != 0) {
      return bad(gguf_key::kRopeDimensionCount, hp,
                 "rotary dimensions " + std::to_string(hp.n_rot) +
                     " must be even and at most the head size " + std::to_string(hp.head_dim_k));
    }
    if (!(hp.rope_freq_base > 0.0f) || !std::isfinite(hp.rope_freq_base)) {
      return bad(gguf_key::kRopeFreqBase, hp, "RoPE base must be positive and finite");
    }
    if (!(hp.rope_scaling_factor > 0.0f) || !std::isfinite(hp.rope_scaling_factor)) {
      return bad(gguf_key::kRopeScalingFactor, hp, "RoPE scaling factor must be positive");
    }
  }
  if (!(hp.norm_eps > 0.0f) || !std::isfinite(hp.norm_eps)) {
    return bad(hp.rms_norm ? gguf_key::kLayerNormRmsEps : gguf_key::kLayerNormEps, hp,
               "norm epsilon must be positive and finite");
  }
  return ok_status();
}

Status validate_experts(const HParams& hp) {
  SYN_RETURN_IF_ERROR(check_range(gguf_key::kExpertCount, hp, hp.n_expert, kMaxMoeExperts));
  SYN_RETURN_IF_ERROR(check_range(gguf_key::kExpertUsedCount, hp, hp.n_expert_used, hp.n_expert));
  return check_range(gguf_key::kExpertFeedForwardLength, hp, hp.n_ff_expert, kMaxFeedForward);
}

Status write_common_hparams(const HParams& hp, GgufWriter& w) {
  const std::string_view a = hp.arch;
  SYN_RETURN_IF_ERROR(w.set_string(gguf_key::kArchitecture, hp.arch));
  SYN_RETURN_IF_ERROR(w.set_scalar(arch_key(a, gguf_key::kVocabSize), hp.n_vocab));
  SYN_RETURN_IF_ERROR(w.set_scalar(arch_key(a, gguf_key::kContextLength), hp.n_ctx_train));
  SYN_RETURN_IF_ERROR(w.set_scalar(arch_key(a, gguf_key::kEmbeddingLength), hp.n_embd));
  SYN_RETURN_IF_ERROR(w.set_scalar(arch_key(a, gguf_key::kFeedForwardLength), hp.n_ff));
  SYN_RETURN_IF_ERROR(w.set_scalar(arch_key(a, gguf_key::kBlockCount), hp.n_layer));
  SYN_RETURN_IF_ERROR(w.set_scalar(arch_key(a, gguf_key::kHeadCount), hp.n_head));
  if (hp.layer_n_head_kv.empty()) {
    SYN_RETURN_IF_ERROR(w.set_scalar(arch_key(a, gguf_key::kHeadCountKv), hp.n_head_kv));
  } else {
    std::vector<int32_t> counts(hp.layer_n_head_kv.begin(), hp.layer_n_head_kv.end());
    SYN_RETURN_IF_ERROR(w.set(arch_key(a, gguf_key::kHeadCountKv), GgufValue::array(counts)));
  }
  SYN_RETURN_IF_ERROR(w.set_scalar(arch_key(a, gguf_key::kKeyLength), hp.head_dim_k));
  SYN_RETURN_IF_ERROR(w.set_scalar(arch_key(a, gguf_key::kValueLength), hp.head_dim_v));
  return w.set_scalar(
      arch_key(a, hp.rms_norm ? gguf_key::kLayerNormRmsEps : gguf_key::kLayerNormEps), hp.norm_eps);
}

Status write_rope_hparams(const HParams& hp, GgufWriter& w) {
  const std::string_view a = hp.arch;
  SYN_RETURN_IF_ERROR(w.set_scalar(arch_key(a, gguf_key::kRopeDimensionCount), hp.n_rot));
  SYN_RETURN_IF_ERROR(w.set_scalar(arch_key(a, gguf_key::kRopeFreqBase), hp.rope_freq_base));
  if (hp.rope_scaling == RopeScaling::kNone) return ok_status();
  SYN_RETURN_IF_ERROR(w.set_string(arch_key(a, gguf_key::kRopeScalingType),
                                   std::string(rope_scaling_name(hp.rope_scaling))));
  SYN_RETURN_IF_ERROR(
      w.set_scalar(arch_key(a, gguf_key::kRopeScalingFactor), hp.rope_scaling_factor));
  return w.set_scalar(arch_key(a, gguf_key::kRopeScalingOriginalContext), hp.rope_original_context);
}

void append_attention_tensors(const HParams& hp, uint32_t b, const DecoderBlockOptions& options,
                              std::vector<TensorSpec>& out) {
  const uint64_t d = hp.n_embd;
  if (options.fused_qkv) {
    out.push_back({block_tensor(b, "attn_qkv.weight"),
                   {d, uint64_t{hp.q_dim()} + hp.k_dim() + hp.v_dim()},
                   TensorRole::kAttention});
  } else {
    out.push_back({block_tensor(b, "attn_q.weight"), {d, hp.q_dim()}, TensorRole::kAttention});
    out.push_back({block_tensor(b, "attn_k.weight"), {d, hp.k_dim()}, TensorRole::kAttention});
    out.push_back({block_tensor(b, "attn_v.weight"), {d, hp.v_dim()}, TensorRole::kAttention});
  }
  if (options.qkv_bias || options.optional_biases) {
    const bool required = options.qkv_bias;
    out.push_back({block_tensor(b, "attn_q.bias"), {hp.q_dim()}, TensorRole::kBias, required});
    out.push_back({block_tensor(b, "attn_k.bias"), {hp.k_dim()}, TensorRole::kBias, required});
    out.push_back({block_tensor(b, "attn_v.bias"), {hp.v_dim()}, TensorRole::kBias, required});
  }
  if (options.qk_norm) {
    out.push_back({block_tensor(b, "attn_q_norm.weight"), {hp.head_dim_k}, TensorRole::kNorm});
    out.push_back({block_tensor(b, "attn_k_norm.weight"), {hp.head_dim_k}, TensorRole::kNorm});
  }
  out.push_back({block_tensor(b, "attn_output.weight"),
                 {static_cast<uint64_t>(hp.n_head) * hp.head_dim_v, d},
                 TensorRole::kAttention});
  if (options.optional_biases) {
    out.push_back({block_tensor(b, "attn_output.bias"), {d}, TensorRole::kBias, false});
  }
  if (options.post_norms) {
    out.push_back({block_tensor(b, "post_attention_norm.weight"), {d}, TensorRole::kNorm});
  }
}

void append_feed_forward_tensors(const HParams& hp, uint32_t b, const DecoderBlockOptions& options,
                                 std::vector<TensorSpec>& out) {
  const uint64_t d = hp.n_embd;
  out.push_back({block_tensor(b, "ffn_norm.weight"), {d}, TensorRole::kNorm});
  if (options.moe) {
    const uint64_t f = hp.n_ff_expert, n = hp.n_expert;
    out.push_back({block_tensor(b, "ffn_gate_inp.weight"), {d, n}, TensorRole::kRouter});
    out.push_back({block_tensor(b, "ffn_gate_exps.weight"), {d, f, n}, TensorRole::kFeedForward});
    out.push_back({block_tensor(b, "ffn_up_exps.weight"), {d, f, n}, TensorRole::kFeedForward});
    out.push_back({block_tensor(b, "ffn_down_exps.weight"), {f, d, n}, TensorRole::kFeedForward});
  } else if (options.fused_gate_up) {
    out.push_back(
        {block_tensor(b, "ffn_up.weight"), {d, uint64_t{2} * hp.n_ff}, TensorRole::kFeedForward});
    out.push_back({block_tensor(b, "ffn_down.weight"), {hp.n_ff, d}, TensorRole::kFeedForward});
  } else {
    out.push_back({block_tensor(b, "ffn_gate.weight"), {d, hp.n_ff}, TensorRole::kFeedForward});
    out.push_back({block_tensor(b, "ffn_up.weight"), {d, hp.n_ff}, TensorRole::kFeedForward});
    out.push_back({block_tensor(b, "ffn_down.weight"), {hp.n_ff, d}, TensorRole::kFeedForward});
  }
  if (options.post_norms) {
    out.push_back({block_tensor(b, "post_ffw_norm.weight"), {d}, TensorRole::kNorm});
  }
}

std::vector<TensorSpec> decoder_tensors(const HParams& hp, const DecoderBlockOptions& options) {
  const uint64_t d = hp.n_embd;
  std::vector<TensorSpec> out;
  out.push_back({"token_embd.weight", {d, hp.n_vocab}, TensorRole::kTokenEmbedding});
  for (uint32_t b = 0; b < hp.n_layer; ++b) {
    out.push_back({block_tensor(b, "attn_norm.weight"), {d}, TensorRole::kNorm});
    append_attention_tensors(hp, b, options, out);
    append_feed_forward_tensors(hp, b, options, out);
  }
  // Llama 3.1-style per-pair frequency divisors (optional).
  out.push_back({"rope_freqs.weight", {hp.n_rot / 2}, TensorRole::kNorm, /*required=*/false});
  out.push_back({"output_norm.weight", {d}, TensorRole::kNorm});
  out.push_back({"output.weight", {d, hp.n_vocab}, TensorRole::kOutput, /*required=*/false});
  return out;
}

AttentionBlockOptions attention_options(const DecoderBlockOptions& blocks) {
  AttentionBlockOptions a;
  a.qkv_bias = blocks.qkv_bias;
  a.optional_biases = blocks.optional_biases;
  a.qk_norm = blocks.qk_norm;
  a.fused_qkv = blocks.fused_qkv;
  a.post_norm = blocks.post_norms;
  return a;
}

Status DecoderArchitecture::read_hparams(const GgufMetadata& md, HParams& hp) const {
  hp.kind = ModelKind::kDecoder;
  hp.rms_norm = true;
  hp.rope_layout = traits_.rope_layout;
  hp.rope_freq_base = traits_.default_rope_freq_base;
  SYN_RETURN_IF_ERROR(read_common_hparams(md, name(), hp));
  SYN_RETURN_IF_ERROR(read_rope_hparams(md, name(), hp));
  SYN_ASSIGN_OR_RETURN(hp.norm_eps, md.get_f32(arch_key(name(), gguf_key::kLayerNormRmsEps)));
  // How the decoder embeds (synapse embed, /v1/embeddings): the file's <arch>.pooling_type as
  // llama.cpp numbers it, else the last token (the Qwen3-Embedding recipe).
  const std::string pooling_key = arch_key(name(), gguf_key::kPoolingType);
  SYN_ASSIGN_OR_RETURN(const uint32_t pooling,
                       md.get_u32_or(pooling_key, static_cast<uint32_t>(PoolingType::kLast)));
  if (pooling > static_cast<uint32_t>(PoolingType::kRank)) {
    return Status(ErrorCode::kBadValue, "unknown pooling type " + std::to_string(pooling),
                  ErrorWhere{.key = pooling_key});
  }
  hp.pooling = static_cast<PoolingType>(pooling);
  if (!traits_.attention_free_layers) {
    for (uint32_t n : hp.layer_n_head_kv) {
      if (n == 0) {
        return Status(ErrorCode::kUnsupported,
                      "layers without attention are not part of the '" + hp.arch + "' architecture",
                      ErrorWhere{.key = arch_key(name(), gguf_key::kHeadCountKv)});
      }
    }
  }
  return validate_hparams(hp);
}

Status DecoderArchitecture::write_hparams(const HParams& hp, GgufWriter& w) const {
  SYN_RETURN_IF_ERROR(write_common_hparams(hp, w));
  // Written only when it is not the default, so generation models' metadata stays as it was.
  if (hp.pooling != PoolingType::kLast) {
    SYN_RETURN_IF_ERROR(
        w.set_scalar(arch_key(name(), gguf_key::kPoolingType), static_cast<uint32_t>(hp.pooling)));
  }
  return write_rope_hparams(hp, w);
}

std::vector<TensorSpec> DecoderArchitecture::tensors(const HParams& hp) const {
  return decoder_tensors(hp, traits_.blocks);
}

HParams DecoderArchitecture::synthetic_defaults() const {
  HParams hp;
  hp.arch = std::string(name());
  hp.rope_layout = traits_.rope_layout;
  hp.rope_freq_base = traits_.default_rope_freq_base;
  hp.norm_eps = 1e-6f;
  hp.pooling = PoolingType::kLast;
  return hp;
}

Result<ModelIr> DecoderArchitecture::build_graph(const HParams& hp, const ModelFile& file,
                                                 const GraphOptions& options) const {
  GraphBuilder g(hp, file, options);
  g.token_embedding();
  const AttentionBlockOptions attention = attention_options(traits_.blocks);
  for (uint32_t b = 0; b < hp.n_layer; ++b) {
    g.attention_block(b, attention);
    g.feed_forward_block(b, {});
  }
  g.output_head();
  return g.finish();
}

}  // namespace synapse::arch
