// SPDX-License-Identifier: Apache-2.0
// Hyper-parameters of a model, read from GGUF metadata by its architecture. Model facts are data:
// sizes and flags come from here, never from per-size code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace synapse {

enum class ModelKind { kDecoder, kEncoder };
// How rotary embedding pairs dimensions: (0,1),(2,3),... or (i, i + n_rot/2) as in GPT-NeoX.
enum class RopeLayout { kNone, kAdjacentPairs, kNeoX };
enum class RopeScaling { kNone, kLinear, kYarn };
// llama.cpp's pooling type ids, as stored in <arch>.pooling_type.
enum class PoolingType : uint32_t { kNone = 0, kMean = 1, kCls = 2, kLast = 3, kRank = 4 };

std::string_view rope_layout_name(RopeLayout layout);
std::string_view rope_scaling_name(RopeScaling scaling);
std::string_view pooling_type_name(PoolingType pooling);
std::optional<PoolingType> pooling_type_from_name(std::string_view name);  // "mean", ...

struct HParams {
  std::string arch;
  ModelKind kind = ModelKind::kDecoder;
  uint32_t n_vocab = 0;
  uint32_t n_ctx_train = 0;
  uint32_t n_embd = 0;
  uint32_t n_ff = 0;
  uint32_t n_layer = 0;
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t head_dim_k = 0;         // per-head key (and query) size
  uint32_t head_dim_v = 0;         // per-head value size
  bool head_dim_explicit = false;  // attention.key_length was in the file (else n_embd / n_head)
  uint32_t n_rot = 0;              // rotary dimensions per head; 0 without RoPE
  RopeLayout rope_layout = RopeLayout::kNone;
  float rope_freq_base = 10000.0f;
  RopeScaling rope_scaling = RopeScaling::kNone;
  float rope_scaling_factor = 1.0f;
  uint32_t rope_original_context = 0;
  // YaRN's extra parameters (llama.cpp's defaults when the file does not set them).
  float rope_attn_factor = 1.0f;       // <arch>.rope.scaling.attn_factor
  float rope_yarn_log_mul = 0.0f;      // <arch>.rope.scaling.yarn_log_multiplier
  float rope_yarn_ext_factor = -1.0f;  // <arch>.rope.scaling.yarn_ext_factor; < 0: by scaling type
  float rope_yarn_beta_fast = 32.0f;   // <arch>.rope.scaling.yarn_beta_fast
  float rope_yarn_beta_slow = 1.0f;    // <arch>.rope.scaling.yarn_beta_slow
  bool rms_norm = true;                // RMSNorm (decoders) or LayerNorm (BERT)
  float norm_eps = 1e-5f;
  bool causal = true;
  PoolingType pooling = PoolingType::kNone;
  uint32_t n_token_types = 0;  // BERT token-type (segment) embeddings
  uint32_t n_cls_out =
      0;  // classification head outputs (<arch>.classifier.output_labels); 0: none declared
  // Local attention: a sliding window on the layers of the pattern (Gemma 2/3, Phi-3 when set).
  uint32_t sliding_window = 0;  // <arch>.attention.sliding_window; 0: none
  // Layer il is local iff swa_period > 0 and il % swa_period < swa_period - 1 (Gemma 2: 2,
  // Gemma 3: 6); swa_period 1 makes every layer local.
  uint32_t swa_period = 0;
  float rope_freq_base_swa = 0.0f;  // <arch>.rope.freq_base_swa; 0: the global base
  float attn_softcap = 0.0f;        // <arch>.attn_logit_softcapping; 0: none
  float final_softcap = 0.0f;       // <arch>.final_logit_softcapping; 0: none
  // KV heads per layer when <arch>.attention.head_count_kv is an array (LFM2: 0 marks a layer
  // without attention); empty: n_head_kv on every layer. n_head_kv is then the largest entry.
  std::vector<uint32_t> layer_n_head_kv;
  uint32_t conv_kernel = 0;  // <arch>.shortconv.l_cache: taps of the short convolution
  // Mixture of experts (<arch>.expert_count, expert_used_count, expert_feed_forward_length).
  uint32_t n_expert = 0;
  uint32_t n_expert_used = 0;
  uint32_t n_ff_expert = 0;

  // A layer without attention (its KV head count is 0).
  bool is_attention_free(uint32_t il) const {
    return il < layer_n_head_kv.size() && layer_n_head_kv[il] == 0;
  }
  bool is_local_layer(uint32_t il) const {
    if (sliding_window == 0 || swa_period == 0) return false;
    return swa_period == 1 || il % swa_period < swa_period - 1;
  }

  uint32_t q_dim() const { return n_head * head_dim_k; }
  uint32_t k_dim() const { return n_head_kv * head_dim_k; }
  uint32_t v_dim() const { return n_head_kv * head_dim_v; }
};

}  // namespace synapse
