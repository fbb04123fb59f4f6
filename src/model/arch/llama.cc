// SPDX-License-Identifier: Apache-2.0
// Llama family (Llama 1-3, TinyLlama, stories): pre-norm RMSNorm blocks, GQA attention with RoPE
// over adjacent pairs, SwiGLU feed-forward; output head optional (tied to token_embd when absent).
#include "format/gguf/gguf_keys.h"
#include "model/arch/common.h"
#include "model/arch/registry.h"

namespace synapse::arch {
namespace {

class Llama final : public Architecture {
 public:
  std::string_view name() const override { return "llama"; }
  ModelKind kind() const override { return ModelKind::kDecoder; }

  Status read_hparams(const GgufMetadata& md, HParams& hp) const override {
    hp.kind = ModelKind::kDecoder;
    hp.rms_norm = true;
    hp.rope_layout = RopeLayout::kAdjacentPairs;
    hp.rope_freq_base = 10000.0f;
    SYN_RETURN_IF_ERROR(read_common_hparams(md, name(), hp));
    SYN_RETURN_IF_ERROR(read_rope_hparams(md, name(), hp));
    SYN_ASSIGN_OR_RETURN(hp.norm_eps,
                         md.get_f32(gguf_key::arch_key(name(), gguf_key::kLayerNormRmsEps)));
    return validate_hparams(hp);
  }

  Status write_hparams(const HParams& hp, GgufWriter& w) const override {
    SYN_RETURN_IF_ERROR(write_common_hparams(hp, w));
    return write_rope_hparams(hp, w);
  }

  std::vector<TensorSpec> tensors(const HParams& hp) const override {
    return decoder_tensors(hp, {.optional_biases = true});
  }

  HParams synthetic_defaults() const override {
    HParams hp;
    hp.arch = std::string(name());
    hp.rope_layout = RopeLayout::kAdjacentPairs;
    hp.rope_freq_base = 10000.0f;
    hp.norm_eps = 1e-6f;
    return hp;
  }
};

}  // namespace

const Architecture& llama_architecture() {
  static const Llama instance;
  return instance;
}

}  // namespace synapse::arch
