// SPDX-License-Identifier: Apache-2.0
// Llama family (Llama 1-3, TinyLlama, stories): pre-norm RMSNorm blocks, GQA attention with RoPE
// over adjacent pairs (base 10000 unless the file says otherwise), SwiGLU feed-forward. Biases
// are optional (some Llama-architecture conversions carry them); the output head is optional
// (tied to token_embd when absent).
#include "model/arch/common.h"
#include "model/arch/registry.h"

namespace synapse::arch {

const Architecture& llama_architecture() {
  static const DecoderArchitecture instance({.name = "llama",
                                             .rope_layout = RopeLayout::kAdjacentPairs,
                                             .default_rope_freq_base = 10000.0f,
                                             .blocks = {.optional_biases = true},
                                             .tied_output = false});
  return instance;
}

}  // namespace synapse::arch
