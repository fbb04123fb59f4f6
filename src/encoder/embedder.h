// SPDX-License-Identifier: Apache-2.0
// Text in, vectors or scores out: an encoder model with its own tokenizer. `embed` tokenizes
// every input, packs them into batches of at most `max_batch_tokens` tokens (no padding), runs
// the encoder and pools; `rerank` scores `[CLS] query [SEP] document [SEP]` pairs (token types
// 0 then 1) through the model's classification head. One caller at a time: an Embedder owns the
// workspace its forward passes reuse; the ThreadPool is the caller's.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "encoder/encoder_forward.h"
#include "encoder/encoder_model.h"
#include "format/model_file.h"
#include "tokenizer/tokenizer.h"

namespace synapse {

struct EmbedOptions {
  // Default: the model's pooling type (bert.pooling_type); a reranker's rank pooling embeds with
  // the CLS vector. kNone returns one vector per token.
  std::optional<PoolingType> pooling;
  bool normalize = true;  // L2-normalize every vector
  bool truncate = false;  // cut inputs longer than the context instead of failing
  EncoderGelu gelu = EncoderGelu::kTanh;
};

struct EmbeddingItem {
  std::vector<float> values;  // n_embd floats, or n_tokens * n_embd for pooling none
  size_t n_tokens = 0;        // tokens the model saw (after truncation)
  bool truncated = false;
};

struct EmbedResult {
  size_t n_embd = 0;
  PoolingType pooling = PoolingType::kMean;
  std::vector<EmbeddingItem> items;  // in input order
  size_t prompt_tokens = 0;          // sum of n_tokens
};

struct RerankItem {
  size_t index = 0;    // position of the document in the request
  float score = 0.0f;  // the head's first output, raw (no sigmoid), as llama.cpp returns it
  size_t n_tokens = 0;
};

struct RerankResult {
  std::vector<RerankItem> items;  // by descending score (ties: lower index first), top_n kept
  size_t prompt_tokens = 0;
};

class Embedder {
 public:
  // Takes the model file (kept mapped for the Embedder's life) and builds the model and its
  // tokenizer. Non-encoder models are `unsupported`.
  static Result<std::unique_ptr<Embedder>> open(std::unique_ptr<ModelFile> file);

  const EncoderModel& model() const { return *model_; }
  const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }
  size_t n_embd() const { return model_->hparams().n_embd; }
  bool can_rerank() const { return model_->classifier().has_value(); }
  // The most tokens one forward pass takes (inputs are grouped up to it; one longer input runs
  // alone).
  void set_max_batch_tokens(size_t tokens) { max_batch_tokens_ = tokens; }

  // invalid_argument (naming "input[i]") for an empty list or an empty string;
  // context_length_exceeded for an input longer than the context unless options.truncate.
  Result<EmbedResult> embed(std::span<const std::string> inputs, const EmbedOptions& options,
                            ThreadPool& pool);
  // Same, from token ids (the special tokens included as the caller wants them).
  Result<EmbedResult> embed_tokens(std::span<const std::vector<int32_t>> inputs,
                                   const EmbedOptions& options, ThreadPool& pool);

  // top_n 0: all. unsupported when the model has no classification head. Truncation (when
  // asked) shortens the document, never the query.
  Result<RerankResult> rerank(std::string_view query, std::span<const std::string> documents,
                              size_t top_n, bool truncate, ThreadPool& pool);

 private:
  Embedder(std::unique_ptr<ModelFile> file, std::unique_ptr<EncoderModel> model,
           tokenizer::Tokenizer tokenizer);

  struct Sequence {
    std::vector<int32_t> tokens;
    std::vector<int32_t> types;  // empty: all 0
    bool truncated = false;
  };
  // Runs the sequences in packed batches; calls on_sequence(index, hidden rows) for each.
  template <typename Fn>
  Status run_batches(std::span<const Sequence> sequences, EncoderGelu gelu, ThreadPool& pool,
                     Fn&& on_sequence);
  Result<EmbedResult> embed_sequences(std::vector<Sequence> sequences, const EmbedOptions& options,
                                      ThreadPool& pool);
  Status fit_context(Sequence& seq, bool truncate, size_t index, const char* field) const;

  std::unique_ptr<ModelFile> file_;
  std::unique_ptr<EncoderModel> model_;
  tokenizer::Tokenizer tokenizer_;
  EncoderWorkspace workspace_;
  size_t max_batch_tokens_ = 4096;
};

}  // namespace synapse
