// SPDX-License-Identifier: Apache-2.0
// Names of the standard GGUF metadata keys (as llama.cpp's converters write them). Keys with an
// architecture prefix are written as suffixes: arch_key(arch, kKeyContextLength).
#pragma once

#include <string>
#include <string_view>

namespace synapse::gguf_key {

inline constexpr std::string_view kArchitecture = "general.architecture";
inline constexpr std::string_view kName = "general.name";
inline constexpr std::string_view kAlignment = "general.alignment";
inline constexpr std::string_view kFileType = "general.file_type";
inline constexpr std::string_view kQuantizationVersion = "general.quantization_version";

// Per-architecture suffixes.
inline constexpr std::string_view kContextLength = "context_length";
inline constexpr std::string_view kEmbeddingLength = "embedding_length";
inline constexpr std::string_view kFeedForwardLength = "feed_forward_length";
inline constexpr std::string_view kBlockCount = "block_count";
inline constexpr std::string_view kHeadCount = "attention.head_count";
inline constexpr std::string_view kHeadCountKv = "attention.head_count_kv";
inline constexpr std::string_view kKeyLength = "attention.key_length";
inline constexpr std::string_view kValueLength = "attention.value_length";
inline constexpr std::string_view kLayerNormRmsEps = "attention.layer_norm_rms_epsilon";
inline constexpr std::string_view kLayerNormEps = "attention.layer_norm_epsilon";
inline constexpr std::string_view kCausal = "attention.causal";
inline constexpr std::string_view kRopeDimensionCount = "rope.dimension_count";
inline constexpr std::string_view kRopeFreqBase = "rope.freq_base";
inline constexpr std::string_view kRopeScalingType = "rope.scaling.type";
inline constexpr std::string_view kRopeScalingFactor = "rope.scaling.factor";
inline constexpr std::string_view kRopeScalingOriginalContext =
    "rope.scaling.original_context_length";
inline constexpr std::string_view kRopeScalingAttnFactor = "rope.scaling.attn_factor";
inline constexpr std::string_view kRopeScalingYarnLogMul = "rope.scaling.yarn_log_multiplier";
inline constexpr std::string_view kRopeScalingYarnExtFactor = "rope.scaling.yarn_ext_factor";
inline constexpr std::string_view kRopeScalingYarnBetaFast = "rope.scaling.yarn_beta_fast";
inline constexpr std::string_view kRopeScalingYarnBetaSlow = "rope.scaling.yarn_beta_slow";
inline constexpr std::string_view kRopeFreqBaseSwa = "rope.freq_base_swa";
inline constexpr std::string_view kSlidingWindow = "attention.sliding_window";
inline constexpr std::string_view kAttnLogitSoftcap = "attn_logit_softcapping";
inline constexpr std::string_view kFinalLogitSoftcap = "final_logit_softcapping";
inline constexpr std::string_view kExpertCount = "expert_count";
inline constexpr std::string_view kExpertUsedCount = "expert_used_count";
inline constexpr std::string_view kExpertFeedForwardLength = "expert_feed_forward_length";
inline constexpr std::string_view kShortConvLCache = "shortconv.l_cache";
inline constexpr std::string_view kVocabSize = "vocab_size";
inline constexpr std::string_view kPoolingType = "pooling_type";
// Labels of a classification head (rerankers); their count is the head's output size.
inline constexpr std::string_view kClassifierOutputLabels = "classifier.output_labels";

inline std::string arch_key(std::string_view arch, std::string_view suffix) {
  std::string key(arch);
  key += '.';
  key += suffix;
  return key;
}

// Tokenizer.
inline constexpr std::string_view kTokenizerModel = "tokenizer.ggml.model";
inline constexpr std::string_view kTokenizerPre = "tokenizer.ggml.pre";
inline constexpr std::string_view kTokenizerTokens = "tokenizer.ggml.tokens";
inline constexpr std::string_view kTokenizerScores = "tokenizer.ggml.scores";
inline constexpr std::string_view kTokenizerTokenType = "tokenizer.ggml.token_type";
inline constexpr std::string_view kTokenizerTokenTypeCount = "tokenizer.ggml.token_type_count";
inline constexpr std::string_view kTokenizerMerges = "tokenizer.ggml.merges";
inline constexpr std::string_view kTokenizerBosId = "tokenizer.ggml.bos_token_id";
inline constexpr std::string_view kTokenizerEosId = "tokenizer.ggml.eos_token_id";
inline constexpr std::string_view kTokenizerUnknownId = "tokenizer.ggml.unknown_token_id";
// Sic: llama.cpp spells it "seperator".
inline constexpr std::string_view kTokenizerSeparatorId = "tokenizer.ggml.seperator_token_id";
inline constexpr std::string_view kTokenizerPaddingId = "tokenizer.ggml.padding_token_id";
inline constexpr std::string_view kTokenizerClsId = "tokenizer.ggml.cls_token_id";
inline constexpr std::string_view kTokenizerMaskId = "tokenizer.ggml.mask_token_id";
inline constexpr std::string_view kTokenizerAddBos = "tokenizer.ggml.add_bos_token";
inline constexpr std::string_view kTokenizerAddEos = "tokenizer.ggml.add_eos_token";
inline constexpr std::string_view kTokenizerAddSpacePrefix = "tokenizer.ggml.add_space_prefix";
inline constexpr std::string_view kChatTemplate = "tokenizer.chat_template";

inline constexpr std::string_view kTokenizerPrefix = "tokenizer.";

}  // namespace synapse::gguf_key
