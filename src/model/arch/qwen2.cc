// SPDX-License-Identifier: Apache-2.0
// Qwen2 / Qwen2.5: Llama-shaped blocks with required q/k/v biases and RoPE over halves (NeoX
// layout, base 1e6 unless the file says otherwise); usually a tied output head.
#include "model/arch/common.h"
#include "model/arch/registry.h"

namespace synapse::arch {

const Architecture& qwen2_architecture() {
  static const DecoderArchitecture instance({.name = "qwen2",
                                             .rope_layout = RopeLayout::kNeoX,
                                             .default_rope_freq_base = 1000000.0f,
                                             .blocks = {.qkv_bias = true}});
  return instance;
}

}  // namespace synapse::arch
