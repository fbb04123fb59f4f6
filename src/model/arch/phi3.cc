// SPDX-License-Identifier: Apache-2.0
// Phi-3 / Phi-3.5 / Phi-4-mini: Llama-shaped blocks with one fused attn_qkv matrix (rows q | k |
// v) and one fused ffn_up matrix (rows gate | up, SwiGLU), RoPE over halves (NeoX). LongRoPE
// models carry rope_factors_long/short (per-pair frequency divisors) and an attention factor
// (rope.scaling.attn_factor) that scales cos and sin: as llama.cpp does, the long factors apply
// when the context run exceeds rope.scaling.original_context_length, the short ones otherwise.
// A non-zero attention.sliding_window makes every layer local.
#include "format/gguf/gguf_keys.h"
#include "model/arch/common.h"
#include "model/arch/registry.h"

namespace synapse::arch {
namespace {

using gguf_key::arch_key;

class Phi3Architecture final : public DecoderArchitecture {
 public:
  Phi3Architecture()
      : DecoderArchitecture({.name = "phi3",
                             .rope_layout = RopeLayout::kNeoX,
                             .default_rope_freq_base = 10000.0f,
                             .blocks = {.fused_qkv = true, .fused_gate_up = true},
                             .tied_output = false}) {}

  Status read_hparams(const GgufMetadata& md, HParams& hp) const override {
    SYN_RETURN_IF_ERROR(DecoderArchitecture::read_hparams(md, hp));
    SYN_ASSIGN_OR_RETURN(hp.sliding_window,
                         md.get_u32_or(arch_key(name(), gguf_key::kSlidingWindow), 0));
    hp.swa_period = hp.sliding_window > 0 ? 1 : 0;
    return ok_status();
  }

  Status write_hparams(const HParams& hp, GgufWriter& w) const override {
    SYN_RETURN_IF_ERROR(DecoderArchitecture::write_hparams(hp, w));
    SYN_RETURN_IF_ERROR(
        w.set_scalar(arch_key(name(), gguf_key::kSlidingWindow), hp.sliding_window));
    if (hp.rope_attn_factor != 1.0f) {
      SYN_RETURN_IF_ERROR(
          w.set_scalar(arch_key(name(), gguf_key::kRopeScalingAttnFactor), hp.rope_attn_factor));
    }
    return ok_status();
  }

  std::vector<TensorSpec> tensors(const HParams& hp) const override {
    std::vector<TensorSpec> out = DecoderArchitecture::tensors(hp);
    for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
      out.push_back({name, {hp.n_rot / 2}, TensorRole::kNorm, /*required=*/false});
    }
    return out;
  }

  Result<ModelIr> build_graph(const HParams& hp, const ModelFile& file,
                              const GraphOptions& options) const override {
    GraphBuilder g(hp, file, options);
    g.token_embedding();
    AttentionBlockOptions attention = attention_options(traits().blocks);
    const bool long_context = options.n_ctx > hp.rope_original_context;
    const char* factors = long_context ? "rope_factors_long.weight" : "rope_factors_short.weight";
    if (file.tensor_view(factors) != nullptr) attention.rope_factors = factors;
    attention.window = hp.sliding_window;
    for (uint32_t b = 0; b < hp.n_layer; ++b) {
      g.attention_block(b, attention);
      g.feed_forward_block(b, {.fused_gate_up = true});
    }
    g.output_head();
    return g.finish();
  }
};

}  // namespace

const Architecture& phi3_architecture() {
  static const Phi3Architecture instance;
  return instance;
}

}  // namespace synapse::arch
