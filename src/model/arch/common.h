// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the architecture files: reading and writing the hyper-parameter keys most
// architectures share, and the tensor lists of the standard blocks (attention, feed-forward, norm).
#pragma once

#include <string_view>
#include <vector>

#include "model/arch/architecture.h"

namespace synapse::arch {

// Keys every architecture has: vocabulary size, context, embedding, feed-forward, blocks, heads.
Status read_common_hparams(const GgufMetadata& metadata, std::string_view arch, HParams& hp);
// RoPE keys (dimension count, base, scaling) for decoders.
Status read_rope_hparams(const GgufMetadata& metadata, std::string_view arch, HParams& hp);
// Bounds every value so later size arithmetic cannot overflow; names the offending key.
Status validate_hparams(const HParams& hp);

Status write_common_hparams(const HParams& hp, GgufWriter& writer);
Status write_rope_hparams(const HParams& hp, GgufWriter& writer);

struct DecoderBlockOptions {
  bool qkv_bias = false;         // q/k/v biases present (Qwen2)
  bool optional_biases = false;  // biases allowed but not required (Llama variants)
  bool qk_norm = false;          // per-head RMSNorm of q and k (Qwen3)
};

// token_embd, blocks (attention + SwiGLU feed-forward, pre-norm), output_norm, output (optional:
// absent means tied to token_embd).
std::vector<TensorSpec> decoder_tensors(const HParams& hp, const DecoderBlockOptions& options);

std::string block_tensor(uint32_t block, std::string_view suffix);  // "blk.<i>.<suffix>"

}  // namespace synapse::arch
