// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the architecture files: reading and writing the hyper-parameter keys most
// architectures share, and the tensor lists of the standard blocks (attention, feed-forward, norm).
#pragma once

#include <string_view>
#include <vector>

#include "model/arch/architecture.h"
#include "model/graph_blocks.h"

namespace synapse::arch {

// Keys every architecture has: vocabulary size, context, embedding, feed-forward, blocks, heads.
Status read_common_hparams(const GgufMetadata& metadata, std::string_view arch, HParams& hp);
// RoPE keys (dimension count, base, scaling) for decoders.
Status read_rope_hparams(const GgufMetadata& metadata, std::string_view arch, HParams& hp);
// Bounds every value so later size arithmetic cannot overflow; names the offending key.
Status validate_hparams(const HParams& hp);
// The expert counts and size of a mixture-of-experts model.
Status validate_experts(const HParams& hp);

Status write_common_hparams(const HParams& hp, GgufWriter& writer);
Status write_rope_hparams(const HParams& hp, GgufWriter& writer);

struct DecoderBlockOptions {
  bool qkv_bias = false;         // q/k/v biases present (Qwen2)
  bool optional_biases = false;  // biases allowed but not required (Llama variants)
  bool qk_norm = false;          // per-head RMSNorm of q and k (Qwen3, Gemma 3)
  bool fused_qkv = false;        // one attn_qkv matrix (Phi-3)
  bool fused_gate_up = false;    // one ffn_up matrix of gate | up rows (Phi-3)
  bool post_norms = false;       // post_attention_norm and post_ffw_norm (Gemma 2/3)
  bool moe = false;              // a mixture-of-experts feed-forward (Qwen3-MoE)
};

// token_embd, blocks (attention + gated feed-forward or experts, pre-norm), output_norm, output
// (optional: absent means tied to token_embd).
std::vector<TensorSpec> decoder_tensors(const HParams& hp, const DecoderBlockOptions& options);
// The tensors of block b's attention (after attn_norm) and of its feed-forward (ffn_norm on),
// for architectures that list their blocks themselves (LFM2).
void append_attention_tensors(const HParams& hp, uint32_t b, const DecoderBlockOptions& options,
                              std::vector<TensorSpec>& out);
void append_feed_forward_tensors(const HParams& hp, uint32_t b, const DecoderBlockOptions& options,
                                 std::vector<TensorSpec>& out);

// The attention and feed-forward options of the graph builder that the block options imply.
AttentionBlockOptions attention_options(const DecoderBlockOptions& blocks);

// What distinguishes the Llama-shaped decoders from one another, as data.
struct DecoderTraits {
  std::string_view name;
  RopeLayout rope_layout = RopeLayout::kAdjacentPairs;
  float default_rope_freq_base = 10000.0f;  // when <arch>.rope.freq_base is absent
  DecoderBlockOptions blocks;
  bool tied_output = true;  // synthetic models tie the output head (the family's usual form)
  // Layers with 0 KV heads carry another mixer (LFM2's short convolution).
  bool attention_free_layers = false;
};

// A pre-norm RMSNorm decoder (Llama, Qwen2, Qwen3) described by its traits.
class DecoderArchitecture : public Architecture {
 public:
  explicit DecoderArchitecture(DecoderTraits traits) : traits_(traits) {}
  const DecoderTraits& traits() const { return traits_; }
  std::string_view name() const override { return traits_.name; }
  ModelKind kind() const override { return ModelKind::kDecoder; }
  Status read_hparams(const GgufMetadata& metadata, HParams& hp) const override;
  Status write_hparams(const HParams& hp, GgufWriter& writer) const override;
  std::vector<TensorSpec> tensors(const HParams& hp) const override;
  HParams synthetic_defaults() const override;
  bool synthetic_tied_output() const override { return traits_.tied_output; }
  Result<ModelIr> build_graph(const HParams& hp, const ModelFile& file,
                              const GraphOptions& options) const override;

 private:
  DecoderTraits traits_;
};

std::string block_tensor(uint32_t block, std::string_view suffix);  // "blk.<i>.<suffix>"

}  // namespace synapse::arch
