// SPDX-License-Identifier: Apache-2.0
// Qwen3 (dense): no q/k/v biases; per-head RMSNorm of q and k before RoPE (NeoX layout, base 1e6
// unless the file says otherwise). The head size is explicit (attention.key_length) and need not
// equal n_embd / n_head.
#include "model/arch/common.h"
#include "model/arch/registry.h"

namespace synapse::arch {

const Architecture& qwen3_architecture() {
  static const DecoderArchitecture instance({.name = "qwen3",
                                             .rope_layout = RopeLayout::kNeoX,
                                             .default_rope_freq_base = 1000000.0f,
                                             .blocks = {.qk_norm = true}});
  return instance;
}

}  // namespace synapse::arch
