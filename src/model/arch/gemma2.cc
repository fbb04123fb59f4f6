// SPDX-License-Identifier: Apache-2.0
// Gemma 2: the Gemma blocks (gemma.h), every other layer local (even layers, period 2), the
// attention scores soft-capped (attn_logit_softcapping, default 50) and so are the final logits
// (final_logit_softcapping, default 30).
#include "model/arch/gemma.h"
#include "model/arch/registry.h"

namespace synapse::arch {

const Architecture& gemma2_architecture() {
  static const GemmaArchitecture instance(
      {.name = "gemma2", .default_swa_period = 2, .softcaps = true, .scaled_by_width_layers = 46});
  return instance;
}

}  // namespace synapse::arch
