// SPDX-License-Identifier: Apache-2.0
// BERT encoders (MiniLM, BGE, E5): token + position + token-type embeddings with LayerNorm,
// post-LayerNorm blocks, bidirectional attention with biases, GELU feed-forward; optional
// classification head (cross-encoder rerankers).
#include "format/gguf/gguf_keys.h"
#include "model/arch/common.h"
#include "model/arch/registry.h"
#include "model/graph_blocks.h"

namespace synapse::arch {
namespace {

using gguf_key::arch_key;

constexpr size_t kMaxClassifierLabels = 1u << 16;

class Bert final : public Architecture {
 public:
  std::string_view name() const override { return "bert"; }
  ModelKind kind() const override { return ModelKind::kEncoder; }

  Status read_hparams(const GgufMetadata& md, HParams& hp) const override {
    hp.kind = ModelKind::kEncoder;
    hp.rms_norm = false;
    hp.rope_layout = RopeLayout::kNone;
    SYN_RETURN_IF_ERROR(read_common_hparams(md, name(), hp));
    SYN_ASSIGN_OR_RETURN(hp.norm_eps, md.get_f32(arch_key(name(), gguf_key::kLayerNormEps)));
    SYN_ASSIGN_OR_RETURN(hp.causal, md.get_bool_or(arch_key(name(), gguf_key::kCausal), false));
    SYN_ASSIGN_OR_RETURN(const uint32_t pooling,
                         md.get_u32_or(arch_key(name(), gguf_key::kPoolingType), 0));
    if (pooling > static_cast<uint32_t>(PoolingType::kRank)) {
      return Status(ErrorCode::kBadValue, "unknown pooling type " + std::to_string(pooling),
                    ErrorWhere{.key = arch_key(name(), gguf_key::kPoolingType)});
    }
    hp.pooling = static_cast<PoolingType>(pooling);
    SYN_ASSIGN_OR_RETURN(hp.n_token_types, md.get_u32_or(gguf_key::kTokenizerTokenTypeCount, 2));
    if (hp.n_token_types == 0 || hp.n_token_types > 1024) {
      return Status(ErrorCode::kBadValue, "token type count outside 1..1024",
                    ErrorWhere{.key = std::string(gguf_key::kTokenizerTokenTypeCount)});
    }
    // A classification head declares its labels (llama.cpp: one output when none are declared).
    const std::string labels_key = arch_key(name(), gguf_key::kClassifierOutputLabels);
    hp.n_cls_out = 0;
    if (md.contains(labels_key)) {
      SYN_ASSIGN_OR_RETURN(const auto labels, md.get_string_array(labels_key));
      if (labels.empty() || labels.size() > kMaxClassifierLabels) {
        return Status(ErrorCode::kBadValue,
                      "classifier label count outside 1.." + std::to_string(kMaxClassifierLabels),
                      ErrorWhere{.key = labels_key});
      }
      hp.n_cls_out = static_cast<uint32_t>(labels.size());
    }
    return validate_hparams(hp);
  }

  Status write_hparams(const HParams& hp, GgufWriter& w) const override {
    SYN_RETURN_IF_ERROR(write_common_hparams(hp, w));
    SYN_RETURN_IF_ERROR(w.set_scalar(arch_key(name(), gguf_key::kCausal), hp.causal));
    SYN_RETURN_IF_ERROR(
        w.set_scalar(arch_key(name(), gguf_key::kPoolingType), static_cast<uint32_t>(hp.pooling)));
    if (hp.n_cls_out > 0) {
      std::vector<std::string> labels;
      for (uint32_t i = 0; i < hp.n_cls_out; ++i) labels.push_back("LABEL_" + std::to_string(i));
      SYN_RETURN_IF_ERROR(w.set(arch_key(name(), gguf_key::kClassifierOutputLabels),
                                GgufValue::string_array(std::move(labels))));
    }
    return w.set_scalar(gguf_key::kTokenizerTokenTypeCount, hp.n_token_types);
  }

  std::vector<TensorSpec> tensors(const HParams& hp) const override {
    const uint64_t d = hp.n_embd;
    const uint64_t ff = hp.n_ff;
    std::vector<TensorSpec> out = {
        {"token_embd.weight", {d, hp.n_vocab}, TensorRole::kTokenEmbedding},
        {"token_types.weight", {d, hp.n_token_types}, TensorRole::kTokenTypeEmbedding},
        {"position_embd.weight", {d, hp.n_ctx_train}, TensorRole::kPositionEmbedding},
        {"token_embd_norm.weight", {d}, TensorRole::kNorm},
        {"token_embd_norm.bias", {d}, TensorRole::kBias},
    };
    for (uint32_t b = 0; b < hp.n_layer; ++b) {
      for (const char* proj : {"attn_q", "attn_k", "attn_v"}) {
        const uint64_t out_dim = std::string_view(proj) == "attn_q"   ? hp.q_dim()
                                 : std::string_view(proj) == "attn_k" ? hp.k_dim()
                                                                      : hp.v_dim();
        out.push_back(
            {block_tensor(b, std::string(proj) + ".weight"), {d, out_dim}, TensorRole::kAttention});
        out.push_back({block_tensor(b, std::string(proj) + ".bias"), {out_dim}, TensorRole::kBias});
      }
      out.push_back({block_tensor(b, "attn_output.weight"),
                     {static_cast<uint64_t>(hp.n_head) * hp.head_dim_v, d},
                     TensorRole::kAttention});
      out.push_back({block_tensor(b, "attn_output.bias"), {d}, TensorRole::kBias});
      out.push_back({block_tensor(b, "attn_output_norm.weight"), {d}, TensorRole::kNorm});
      out.push_back({block_tensor(b, "attn_output_norm.bias"), {d}, TensorRole::kBias});
      out.push_back({block_tensor(b, "ffn_up.weight"), {d, ff}, TensorRole::kFeedForward});
      out.push_back({block_tensor(b, "ffn_up.bias"), {ff}, TensorRole::kBias});
      out.push_back({block_tensor(b, "ffn_down.weight"), {ff, d}, TensorRole::kFeedForward});
      out.push_back({block_tensor(b, "ffn_down.bias"), {d}, TensorRole::kBias});
      out.push_back({block_tensor(b, "layer_output_norm.weight"), {d}, TensorRole::kNorm});
      out.push_back({block_tensor(b, "layer_output_norm.bias"), {d}, TensorRole::kBias});
    }
    // Cross-encoder head: pooler dense layer and the classifier. Optional (embedding models lack
    // it) unless the metadata declares classifier labels, which also fix the output size.
    const bool head = hp.n_cls_out > 0;
    const uint64_t labels = hp.n_cls_out;  // 0: any size
    out.push_back({"cls.weight", {d, d}, TensorRole::kHead, head});
    out.push_back({"cls.bias", {d}, TensorRole::kBias, head});
    out.push_back({"cls.output.weight", {d, labels}, TensorRole::kHead, head});
    out.push_back({"cls.output.bias", {labels}, TensorRole::kBias, head});
    return out;
  }

  Result<ModelIr> build_graph(const HParams& hp, const ModelFile& file,
                              const GraphOptions& options) const override {
    GraphBuilder g(hp, file, options);
    g.summed_embedding();
    for (uint32_t b = 0; b < hp.n_layer; ++b) {
      g.post_norm_attention_block(b);
      g.post_norm_feed_forward_block(b, options.gelu);
    }
    // A cross-encoder's head when the file has one; an embedding model answers hidden states.
    if (file.tensor_view("cls.weight") != nullptr ||
        file.tensor_view("cls.output.weight") != nullptr) {
      g.classifier_head();
    } else {
      g.hidden_state_output();
    }
    return g.finish();
  }

  HParams synthetic_defaults() const override {
    HParams hp;
    hp.arch = std::string(name());
    hp.kind = ModelKind::kEncoder;
    hp.rms_norm = false;
    hp.rope_layout = RopeLayout::kNone;
    hp.norm_eps = 1e-12f;
    hp.causal = false;
    hp.pooling = PoolingType::kMean;
    hp.n_token_types = 2;
    return hp;
  }
};

}  // namespace

const Architecture& bert_architecture() {
  static const Bert instance;
  return instance;
}

}  // namespace synapse::arch
