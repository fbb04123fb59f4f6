// SPDX-License-Identifier: Apache-2.0
// Text in, vectors or scores out, with any model on a runtime Engine the caller owns: a BERT
// encoder (bidirectional; mean, CLS or last pooling; a cross-encoder's classifier for rerank) or
// a decoder (last-token pooling, the Qwen3-Embedding recipe, or mean). Each input runs in its own
// KV sequence; inputs are grouped into steps of at most max_batch_tokens tokens that fit the KV
// pool; the final hidden states are pooled and L2-normalized. The checks and helpers here are
// also what serve::Service uses for embedding and rerank requests, so the two agree.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/hparams.h"
#include "runtime/engine.h"
#include "tokenizer/tokenizer.h"

namespace synapse {

struct EmbedOptions {
  // Default: the model's pooling type (<arch>.pooling_type; last for a decoder that names none);
  // a reranker's rank pooling embeds with the CLS vector. kNone returns one vector per token.
  std::optional<PoolingType> pooling;
  bool normalize = true;  // L2-normalize every vector
  bool truncate = false;  // cut inputs longer than the context instead of failing
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

// The pooling a model embeds with: `asked`, else the model's (`model_pooling`, rank -> CLS).
// none (per-token vectors) only when `allow_none`, else invalid_argument. unsupported (field
// "pooling") for cls/rank on a causal model: its first token has seen nothing of the rest.
Result<PoolingType> embedding_pooling(PoolingType model_pooling, bool bidirectional,
                                      std::optional<PoolingType> asked, bool allow_none);

// Checks one input's tokens, naming it "input[index]": invalid_argument when empty or out of the
// vocabulary; context_length_exceeded when longer than n_ctx unless `truncate`, which keeps the
// first tokens (and the closing token the tokenizer added: [SEP], or a decoder's EOS). Returns
// whether it was truncated.
Result<bool> fit_embedding_input(std::vector<int32_t>& tokens, size_t index, uint32_t n_vocab,
                                 size_t n_ctx, bool truncate, std::optional<int32_t> closing_token);

// The tokens a model embeds for a text: the special tokens the metadata asks for ([CLS] ...
// [SEP] for BERT; BOS, and EOS where the vocabulary adds it, as Qwen3-Embedding's does);
// control-token text stays text.
std::vector<int32_t> embedding_tokens(const tokenizer::Tokenizer& tokenizer, std::string_view text);
// The token the tokenizer appends after a text, if it appends one (kept by truncation).
std::optional<int32_t> appended_closing_token(const tokenizer::Tokenizer& tokenizer);

// A cross-encoder's input for one (query, document) pair: `[CLS] query [SEP] document [SEP]`
// with token types 0 then 1.
struct RerankPair {
  std::vector<int32_t> tokens;
  std::vector<int32_t> types;
  bool truncated = false;
};
// Builds the pairs of a rerank request; truncation (when asked) shortens a document, never the
// query. invalid_argument for an empty query, no documents or an empty document ("documents[i]");
// context_length_exceeded for a pair longer than n_ctx; unsupported without [CLS]/[SEP].
Result<std::vector<RerankPair>> rerank_pairs(const tokenizer::Tokenizer& tokenizer,
                                             std::string_view query,
                                             std::span<const std::string> documents, size_t n_ctx,
                                             bool truncate);
// Whether a model can rerank: a bidirectional encoder with a classifier head.
bool can_rerank(const DecoderModel& model);
// Sorts scored documents by descending score (ties: lower index first) and keeps top_n (0: all);
// internal when a score is not finite.
Status rank_documents(RerankResult& result, size_t top_n);

// Pools one input's hidden rows (n_rows of n_embd) into `item.values` as `pooling` asks (none:
// all rows; CLS and last: the one row given), L2-normalizing each vector when `normalize`.
void pool_hidden_rows(PoolingType pooling, std::span<const float> rows, size_t n_embd,
                      bool normalize, EmbeddingItem& item);
// Which hidden rows of an input a pooling needs.
LogitsWanted pooling_rows(PoolingType pooling);

class Embedder {
 public:
  Embedder(Engine& engine, const tokenizer::Tokenizer& tokenizer)
      : engine_(engine), tokenizer_(tokenizer) {}
  void set_max_batch_tokens(size_t tokens) { max_batch_tokens_ = std::max<size_t>(tokens, 1); }
  size_t n_embd() const { return engine_.model().n_embd(); }
  bool can_rerank() const { return synapse::can_rerank(engine_.model()); }
  const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }

  // Errors as fit_embedding_input and embedding_pooling; "input" for an empty list.
  Result<EmbedResult> embed(std::span<const std::string> inputs, const EmbedOptions& options);
  Result<EmbedResult> embed_tokens(std::span<const std::vector<int32_t>> inputs,
                                   const EmbedOptions& options);
  // Scores each document against the query with the model's classifier (top_n 0: all);
  // unsupported when the model cannot rerank. Errors as rerank_pairs.
  Result<RerankResult> rerank(std::string_view query, std::span<const std::string> documents,
                              size_t top_n, bool truncate);

 private:
  struct Input {
    std::vector<int32_t> tokens;
    std::vector<int32_t> types;  // empty: all 0
    bool truncated = false;
  };
  Result<EmbedResult> embed_inputs(std::vector<Input> inputs, const EmbedOptions& options);
  // Runs the inputs in groups that fit a step; calls on_input(index, output, index in step).
  template <typename Fn>
  Status run_groups(std::span<const Input> inputs, LogitsWanted logits, LogitsWanted hidden,
                    Fn&& on_input);

  Engine& engine_;
  const tokenizer::Tokenizer& tokenizer_;
  size_t max_batch_tokens_ = 4096;
  std::vector<StepInput> step_inputs_;
  std::vector<SeqId> sequences_;
  StepOutput out_;
};

}  // namespace synapse
