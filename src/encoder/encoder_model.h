// SPDX-License-Identifier: Apache-2.0
// The weights of a BERT-family encoder (MiniLM, BGE, E5, cross-encoder rerankers), viewed in
// place in the mapped model file: matrices of any GGUF weight type, vectors (norms, biases)
// converted to F32 once at load. Hyper-parameters and the pooling type come from the metadata.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "base/status.h"
#include "format/model_file.h"
#include "kernels/matmul.h"
#include "model/hparams.h"

namespace synapse {

// A linear layer y = W x + b; `bias` may be null.
struct EncoderLinear {
  WeightMatrix weight;
  const float* bias = nullptr;
};

struct EncoderNorm {
  const float* weight = nullptr;
  const float* bias = nullptr;
};

struct EncoderBlockWeights {
  EncoderLinear q, k, v, output;
  EncoderNorm attn_output_norm;  // post-LayerNorm after the attention residual
  EncoderLinear up, down;
  EncoderNorm layer_output_norm;  // post-LayerNorm after the feed-forward residual
};

// The cross-encoder head llama.cpp applies for rank pooling: score = out(tanh(dense(cls))), where
// either part may be absent (a head of only `out` is a direct projection).
struct EncoderClassifier {
  std::optional<EncoderLinear> dense;  // cls.weight / cls.bias: n_embd -> n_embd
  std::optional<EncoderLinear> out;    // cls.output.weight / cls.output.bias: n_embd -> labels
  size_t n_outputs = 0;                // labels; n_embd when there is only `dense`
};

class EncoderModel {
 public:
  // Reads the hyper-parameters and binds every tensor of a `bert` model. `file` must outlive the
  // model (its tensors are views into the mapping). Models of other architectures are
  // `unsupported`; missing or misshapen tensors are `missing_tensor` / `bad_shape`.
  static Result<std::unique_ptr<EncoderModel>> load(const ModelFile& file);

  const HParams& hparams() const { return hp_; }
  const WeightMatrix& token_embedding() const { return token_embd_; }
  const WeightMatrix& position_embedding() const { return position_embd_; }
  const WeightMatrix& token_type_embedding() const { return token_types_; }
  const EncoderNorm& embedding_norm() const { return embd_norm_; }
  const std::vector<EncoderBlockWeights>& blocks() const { return blocks_; }
  // nullopt when the model has no classification head (an embedding model).
  const std::optional<EncoderClassifier>& classifier() const { return classifier_; }

 private:
  EncoderModel() = default;
  friend class EncoderModelLoader;

  HParams hp_;
  WeightMatrix token_embd_{};
  WeightMatrix position_embd_{};
  WeightMatrix token_types_{};
  EncoderNorm embd_norm_;
  std::vector<EncoderBlockWeights> blocks_;
  std::optional<EncoderClassifier> classifier_;
  std::deque<std::vector<float>> vectors_;  // F32 copies of norms and biases (stable addresses)
};

}  // namespace synapse
