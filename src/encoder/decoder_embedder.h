// SPDX-License-Identifier: Apache-2.0
// Embeddings from a decoder model (llama, qwen2, qwen3): the runtime's Engine prefills each input
// in its own KV sequence and returns the final hidden states (after the final norm, the output
// head's input: Engine's StepInput::hidden), which are pooled — the last token by default, the
// Qwen3-Embedding recipe, or the mean over all tokens — and L2-normalized. CLS pooling needs a
// bidirectional encoder and is refused. The checks and the pooling choice are shared with the
// service, which runs the same prefill through its scheduler (serve::Service).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "encoder/embedder.h"
#include "runtime/engine.h"
#include "tokenizer/tokenizer.h"

namespace synapse {

// The pooling a decoder embeds with: `asked`, else the model's (`model_pooling`: HParams::pooling,
// from <arch>.pooling_type, default last). mean and last pool one vector; none (per-token
// vectors) only when `allow_none`, else invalid_argument. unsupported (field "pooling") for
// cls/rank: a causal model's first token has seen nothing of the rest.
Result<PoolingType> decoder_embedding_pooling(PoolingType model_pooling,
                                              std::optional<PoolingType> asked, bool allow_none);

// Checks one input's tokens for a decoder of context n_ctx, naming it "input[index]":
// invalid_argument when empty or out of the vocabulary; context_length_exceeded when longer than
// n_ctx unless `truncate`, which keeps the first tokens (and a closing end-of-sequence token the
// tokenizer added). Returns whether it was truncated.
Result<bool> fit_decoder_input(std::vector<int32_t>& tokens, size_t index, uint32_t n_vocab,
                               size_t n_ctx, bool truncate, std::optional<int32_t> closing_token);

// The tokens a decoder embeds for a text: the special tokens the metadata asks for (BOS, and
// EOS where the vocabulary adds it, as Qwen3-Embedding's does); control-token text stays text.
std::vector<int32_t> decoder_embedding_tokens(const tokenizer::Tokenizer& tokenizer,
                                              std::string_view text);
// The end-of-sequence id the tokenizer appends, if it appends one (kept by truncation).
std::optional<int32_t> appended_eos(const tokenizer::Tokenizer& tokenizer);

// Text or token ids in, vectors out, on an Engine the caller owns (one caller at a time, like
// the Engine). Inputs run together in steps of at most max_batch_tokens tokens that fit in the KV
// pool; every sequence is released afterwards. On a model opened with MatmulRoute::kStream (as
// serve::serving_decoder_options does) an input's vector does not depend on its batch.
class DecoderEmbedder {
 public:
  DecoderEmbedder(Engine& engine, const tokenizer::Tokenizer& tokenizer)
      : engine_(engine), tokenizer_(tokenizer) {}
  void set_max_batch_tokens(size_t tokens) { max_batch_tokens_ = std::max<size_t>(tokens, 1); }
  size_t n_embd() const { return engine_.model().n_embd(); }

  // EmbedOptions::gelu does not apply. Errors as fit_decoder_input, "input" for an empty list.
  Result<EmbedResult> embed(std::span<const std::string> inputs, const EmbedOptions& options);
  Result<EmbedResult> embed_tokens(std::span<const std::vector<int32_t>> inputs,
                                   const EmbedOptions& options);

 private:
  struct Input {
    std::vector<int32_t> tokens;
    bool truncated = false;
  };
  Result<EmbedResult> embed_inputs(std::vector<Input> inputs, const EmbedOptions& options);
  // Runs inputs [first, end) in one Engine step and fills their items.
  Status run_group(std::span<const Input> inputs, size_t first, size_t end, EmbedResult& result,
                   bool normalize);

  Engine& engine_;
  const tokenizer::Tokenizer& tokenizer_;
  size_t max_batch_tokens_ = 4096;
  std::vector<StepInput> step_inputs_;
  std::vector<SeqId> sequences_;
  StepOutput out_;
};

// Pools one input's hidden rows (n_rows of n_embd) into `item.values` as `pooling` asks (none:
// all rows), L2-normalizing each vector when `normalize`.
void pool_hidden_rows(PoolingType pooling, std::span<const float> rows, size_t n_embd,
                      bool normalize, EmbeddingItem& item);

}  // namespace synapse
