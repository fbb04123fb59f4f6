// SPDX-License-Identifier: Apache-2.0
// What Gemma 2 and Gemma 3 share (gemma2.cc, gemma3.cc): Llama-shaped blocks with post-norms
// after attention and feed-forward, a GeGLU (tanh GELU) feed-forward, input embeddings scaled
// by sqrt(n_embd) (the tied output head reuses the unscaled table), RoPE over halves, and local
// sliding-window layers in a fixed period. Norm weights are used as stored (the converter folds
// Gemma's "1 +" into them).
#pragma once

#include "model/arch/common.h"

namespace synapse::arch {

struct GemmaTraits {
  std::string_view name;
  bool qk_norm = false;             // Gemma 3
  uint32_t default_swa_period = 0;  // local layers: il % period < period - 1
  bool softcaps = false;            // Gemma 2's attention and final soft-caps
  bool local_rope_base = false;     // Gemma 3: rope.freq_base_swa on local layers, unscaled
  // The block count of the family's 27B model, whose queries are scaled by
  // 1/sqrt(n_embd / n_head) (Gemma's query_pre_attn_scalar) instead of 1/sqrt(head size): the
  // two differ only there. llama.cpp tells the 27B by its block count too.
  uint32_t scaled_by_width_layers = 0;
};

class GemmaArchitecture final : public DecoderArchitecture {
 public:
  explicit GemmaArchitecture(GemmaTraits traits);
  Status read_hparams(const GgufMetadata& md, HParams& hp) const override;
  Status write_hparams(const HParams& hp, GgufWriter& w) const override;
  HParams synthetic_defaults() const override;
  Result<ModelIr> build_graph(const HParams& hp, const ModelFile& file,
                              const GraphOptions& options) const override;

 private:
  GemmaTraits gemma_;
};

}  // namespace synapse::arch
