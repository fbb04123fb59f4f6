// SPDX-License-Identifier: Apache-2.0
// `synapse synth`: deterministic random-weight models of any supported architecture and size, so
// tests need no downloaded files. The same options give a byte-identical file on every machine.
// Weights are scaled so that logits are peaked rather than uniform, which makes greedy decoding a
// meaningful test.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "format/gguf/gguf_writer.h"
#include "format/tensor_type.h"
#include "model/hparams.h"

namespace synapse {

struct SynthOptions {
  std::string arch = "llama";
  std::string name;  // general.name; default "synapse-synth-<arch>"
  uint64_t seed = 42;
  // Sizes. n_vocab 0: the vocabulary's size (synthetic: 320 BPE or 160 WordPiece tokens).
  uint32_t n_vocab = 0;
  uint32_t n_ctx = 512;
  uint32_t n_embd = 64;
  uint32_t n_ff = 192;
  uint32_t n_layer = 2;
  uint32_t n_head = 4;
  uint32_t n_head_kv = 2;
  uint32_t head_dim = 0;  // 0: n_embd / n_head
  // Mixture-of-experts architectures (0: the architecture's default; expert FF: n_ff).
  uint32_t n_expert = 0;
  uint32_t n_expert_used = 0;
  uint32_t n_ff_expert = 0;
  std::optional<float> rope_freq_base;  // default per architecture
  std::optional<float> norm_eps;
  std::optional<bool> tied_output;  // default: the architecture's usual form
  // The pooling type written to the metadata (encoders: default mean, rank with a classifier;
  // decoders: default last), and for encoders a classification head (cls.* tensors, a cross-encoder
  // reranker) with this many outputs.
  std::optional<PoolingType> pooling;
  uint32_t classifier_labels = 0;
  // Tensor types by role; vectors (norms, biases) are always F32.
  TensorType type_embedding = TensorType::kF32;
  TensorType type_attention = TensorType::kF32;
  TensorType type_feed_forward = TensorType::kF32;
  TensorType type_output = TensorType::kF32;
  // Copy the tokenizer (all tokenizer.* keys) from this GGUF instead of a synthetic vocabulary.
  std::string vocab_from;
};

// Version of the weight generator, stored in the file (synapse.synth.version): bump it whenever a
// change would alter the bytes produced for the same options.
inline constexpr uint32_t kSynthGeneratorVersion = 1;

// Writes the model to `path` (atomically). Reports progress on a terminal.
Status synthesize_model(const SynthOptions& options, const std::string& path);

}  // namespace synapse
