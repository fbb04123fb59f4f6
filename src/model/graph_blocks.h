// SPDX-License-Identifier: Apache-2.0
// The shared blocks architectures build their IR from: token embedding, pre-norm attention
// (optional q/k/v biases, optional per-head q/k RMSNorm, RoPE, paged KV, GQA), the SwiGLU
// feed-forward, and the output head (final RMSNorm, tied or separate projection). Weights are
// looked up in the model file by their GGUF names; a missing one is recorded with a null view
// and reported by the verifier, naming its region and op.
#pragma once

#include <string>

#include "format/model_file.h"
#include "model/ir.h"

namespace synapse {

struct GraphOptions {
  uint32_t n_ctx = 0;  // tokens per sequence
  TensorType kv_type = TensorType::kF32;
};

struct AttentionBlockOptions {
  bool qkv_bias = false;           // q/k/v biases required (Qwen2)
  bool optional_biases = false;    // q/k/v/output biases used when the file has them (Llama)
  bool qk_norm = false;            // per-head RMSNorm of q and k before RoPE (Qwen3)
};

// RoPE as llama.cpp parameterizes it for these hyper-parameters: linear scaling through
// freq_scale, YaRN's extrapolation mix and magnitude correction (attn_factor). freq_factors is
// left null (the lowering points it at rope_freqs.weight when the model has one).
RopeParams rope_params(const HParams& hp);

class GraphBuilder {
 public:
  GraphBuilder(const HParams& hp, const ModelFile& file, const GraphOptions& options);

  void token_embedding();
  // The attention half of block b: hidden += W_o attention(rope(W_qkv norm(hidden))).
  void attention_block(uint32_t b, const AttentionBlockOptions& options);
  // The feed-forward half: hidden += W_down (silu(W_gate x) * W_up x), x = norm(hidden). The
  // last block's runs on the output rows only (after the rows are selected).
  void swiglu_block(uint32_t b);
  // Final norm and the projection to the vocabulary (output.weight, or token_embd when tied).
  void output_head();

  ModelIr finish() { return std::move(ir_); }

 private:
  IrWeight weight(const std::string& name, std::vector<uint64_t> expected_shape) const;
  bool has(const std::string& name) const { return file_.tensor_view(name) != nullptr; }
  IrRegion& region(IrRegionKind kind, int32_t block);
  // Where the last block's rows are selected: the hidden value of the rows that remain.
  IrValue hidden_of(uint32_t block) const;

  const HParams& hp_;
  const ModelFile& file_;
  ModelIr ir_;
};

}  // namespace synapse
