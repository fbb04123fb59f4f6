// SPDX-License-Identifier: Apache-2.0
// Qwen3-MoE (Qwen3-30B-A3B, ...): Qwen3's attention (per-head q/k RMSNorm, NeoX RoPE, base 1e6)
// with a mixture-of-experts feed-forward in every block: a router (ffn_gate_inp) scores
// expert_count experts, the expert_used_count best by softmax probability run their SwiGLU
// (3-D ffn_{gate,up,down}_exps tensors, one slice per expert), weighted by their probabilities
// renormalized to sum 1 (norm_topk_prob, which llama.cpp assumes for this architecture).
// feed_forward_length is unused; expert_feed_forward_length sizes the experts.
#include "format/gguf/gguf_keys.h"
#include "model/arch/common.h"
#include "model/arch/registry.h"

namespace synapse::arch {
namespace {

using gguf_key::arch_key;

class Qwen3MoeArchitecture final : public DecoderArchitecture {
 public:
  Qwen3MoeArchitecture()
      : DecoderArchitecture({.name = "qwen3moe",
                             .rope_layout = RopeLayout::kNeoX,
                             .default_rope_freq_base = 1000000.0f,
                             .blocks = {.qk_norm = true, .moe = true},
                             .tied_output = false}) {}

  Status read_hparams(const GgufMetadata& md, HParams& hp) const override {
    SYN_RETURN_IF_ERROR(DecoderArchitecture::read_hparams(md, hp));
    SYN_ASSIGN_OR_RETURN(hp.n_expert, md.get_u32(arch_key(name(), gguf_key::kExpertCount)));
    SYN_ASSIGN_OR_RETURN(hp.n_expert_used,
                         md.get_u32(arch_key(name(), gguf_key::kExpertUsedCount)));
    SYN_ASSIGN_OR_RETURN(hp.n_ff_expert,
                         md.get_u32(arch_key(name(), gguf_key::kExpertFeedForwardLength)));
    return validate_experts(hp);
  }

  Status write_hparams(const HParams& hp, GgufWriter& w) const override {
    SYN_RETURN_IF_ERROR(DecoderArchitecture::write_hparams(hp, w));
    SYN_RETURN_IF_ERROR(w.set_scalar(arch_key(name(), gguf_key::kExpertCount), hp.n_expert));
    SYN_RETURN_IF_ERROR(
        w.set_scalar(arch_key(name(), gguf_key::kExpertUsedCount), hp.n_expert_used));
    return w.set_scalar(arch_key(name(), gguf_key::kExpertFeedForwardLength), hp.n_ff_expert);
  }

  HParams synthetic_defaults() const override {
    HParams hp = DecoderArchitecture::synthetic_defaults();
    hp.n_expert = 8;
    hp.n_expert_used = 2;
    hp.n_ff_expert = 64;  // synth sets it from its sizes
    return hp;
  }

  Result<ModelIr> build_graph(const HParams& hp, const ModelFile& file,
                              const GraphOptions& options) const override {
    GraphBuilder g(hp, file, options);
    g.token_embedding();
    const AttentionBlockOptions attention = attention_options(traits().blocks);
    for (uint32_t b = 0; b < hp.n_layer; ++b) {
      g.attention_block(b, attention);
      g.moe_block(b, {.normalize = true});
    }
    g.output_head();
    return g.finish();
  }
};

}  // namespace

const Architecture& qwen3moe_architecture() {
  static const Qwen3MoeArchitecture instance;
  return instance;
}

}  // namespace synapse::arch
