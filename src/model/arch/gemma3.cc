// SPDX-License-Identifier: Apache-2.0
// Gemma 3 (text): the Gemma blocks (gemma.h) with per-head q/k RMSNorm, five local layers to
// one global (period 6, as llama.cpp assumes when the file does not say), the local layers with
// their own unscaled RoPE base (rope.freq_base_swa, default 1e4). No soft-caps.
#include "model/arch/gemma.h"
#include "model/arch/registry.h"

namespace synapse::arch {

const Architecture& gemma3_architecture() {
  static const GemmaArchitecture instance({.name = "gemma3",
                                           .qk_norm = true,
                                           .default_swa_period = 6,
                                           .local_rope_base = true,
                                           .scaled_by_width_layers = 62});
  return instance;
}

}  // namespace synapse::arch
