// SPDX-License-Identifier: Apache-2.0
#include "model/arch/gemma.h"

#include <cmath>

#include "format/gguf/gguf_keys.h"

namespace synapse::arch {
namespace {

using gguf_key::arch_key;

// llama.cpp's defaults when a Gemma 2 file does not give its soft-caps.
constexpr float kDefaultAttnSoftcap = 50.0f;
constexpr float kDefaultFinalSoftcap = 30.0f;
// Gemma 3's local layers' RoPE base when the file does not give it.
constexpr float kDefaultLocalRopeBase = 10000.0f;

}  // namespace

GemmaArchitecture::GemmaArchitecture(GemmaTraits traits)
    : DecoderArchitecture({.name = traits.name,
                           .rope_layout = RopeLayout::kNeoX,
                           .default_rope_freq_base = 10000.0f,
                           .blocks = {.qk_norm = traits.qk_norm, .post_norms = true}}),
      gemma_(traits) {}

Status GemmaArchitecture::read_hparams(const GgufMetadata& md, HParams& hp) const {
  SYN_RETURN_IF_ERROR(DecoderArchitecture::read_hparams(md, hp));
  SYN_ASSIGN_OR_RETURN(hp.sliding_window,
                       md.get_u32_or(arch_key(name(), gguf_key::kSlidingWindow), 0));
  // Real Gemma 3 files do not carry the period; llama.cpp assumes 6 (Gemma 2: 2).
  SYN_ASSIGN_OR_RETURN(hp.swa_period,
                       md.get_u32_or(arch_key(name(), "attention.sliding_window_pattern"),
                                     gemma_.default_swa_period));
  if (gemma_.softcaps) {
    SYN_ASSIGN_OR_RETURN(
        hp.attn_softcap,
        md.get_f32_or(arch_key(name(), gguf_key::kAttnLogitSoftcap), kDefaultAttnSoftcap));
    SYN_ASSIGN_OR_RETURN(
        hp.final_softcap,
        md.get_f32_or(arch_key(name(), gguf_key::kFinalLogitSoftcap), kDefaultFinalSoftcap));
    if (!(hp.attn_softcap >= 0.0f) || !(hp.final_softcap >= 0.0f)) {
      return Status(ErrorCode::kBadValue, "soft-caps must be non-negative",
                    ErrorWhere{.key = arch_key(name(), gguf_key::kAttnLogitSoftcap)});
    }
  }
  if (gemma_.local_rope_base) {
    SYN_ASSIGN_OR_RETURN(
        hp.rope_freq_base_swa,
        md.get_f32_or(arch_key(name(), gguf_key::kRopeFreqBaseSwa), kDefaultLocalRopeBase));
    if (!(hp.rope_freq_base_swa > 0.0f) || !std::isfinite(hp.rope_freq_base_swa)) {
      return Status(ErrorCode::kBadValue, "RoPE base must be positive and finite",
                    ErrorWhere{.key = arch_key(name(), gguf_key::kRopeFreqBaseSwa)});
    }
  }
  return ok_status();
}

Status GemmaArchitecture::write_hparams(const HParams& hp, GgufWriter& w) const {
  SYN_RETURN_IF_ERROR(DecoderArchitecture::write_hparams(hp, w));
  SYN_RETURN_IF_ERROR(w.set_scalar(arch_key(name(), gguf_key::kSlidingWindow), hp.sliding_window));
  if (gemma_.softcaps) {
    SYN_RETURN_IF_ERROR(
        w.set_scalar(arch_key(name(), gguf_key::kAttnLogitSoftcap), hp.attn_softcap));
    SYN_RETURN_IF_ERROR(
        w.set_scalar(arch_key(name(), gguf_key::kFinalLogitSoftcap), hp.final_softcap));
  }
  if (gemma_.local_rope_base) {
    SYN_RETURN_IF_ERROR(
        w.set_scalar(arch_key(name(), gguf_key::kRopeFreqBaseSwa), hp.rope_freq_base_swa));
  }
  return ok_status();
}

HParams GemmaArchitecture::synthetic_defaults() const {
  HParams hp = DecoderArchitecture::synthetic_defaults();
  hp.sliding_window = 16;
  hp.swa_period = gemma_.default_swa_period;
  if (gemma_.softcaps) {
    hp.attn_softcap = kDefaultAttnSoftcap;
    hp.final_softcap = kDefaultFinalSoftcap;
  }
  if (gemma_.local_rope_base) hp.rope_freq_base_swa = kDefaultLocalRopeBase;
  return hp;
}

Result<ModelIr> GemmaArchitecture::build_graph(const HParams& hp, const ModelFile& file,
                                               const GraphOptions& options) const {
  GraphBuilder g(hp, file, options);
  g.token_embedding(std::sqrt(static_cast<float>(hp.n_embd)));
  for (uint32_t b = 0; b < hp.n_layer; ++b) {
    AttentionBlockOptions attention = attention_options(traits().blocks);
    attention.softcap = hp.attn_softcap;
    if (gemma_.scaled_by_width_layers != 0 && hp.n_layer == gemma_.scaled_by_width_layers) {
      attention.query_scale = 1.0f / std::sqrt(static_cast<float>(hp.n_embd / hp.n_head));
    }
    if (hp.is_local_layer(b)) {
      attention.window = hp.sliding_window;
      if (gemma_.local_rope_base) {
        attention.rope_freq_base = hp.rope_freq_base_swa;
        attention.rope_unscaled = true;
      }
    }
    g.attention_block(b, attention);
    g.feed_forward_block(b, {.activation = GatedActivation::kGeGlu, .post_norm = true});
  }
  g.output_head(hp.final_softcap);
  return g.finish();
}

}  // namespace synapse::arch
