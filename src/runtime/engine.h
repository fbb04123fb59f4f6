// SPDX-License-Identifier: Apache-2.0
// The batched step API that the service's continuous batching calls: one step runs a batch of
// {sequence, new token ids, which logits are wanted} through forward passes of at most
// `max_batch_tokens` rows (long prompts are prefilled in chunks), and returns the logits rows in
// input order. Sequences live in the paged KV cache (kv_cache.h); fork() shares a prefix.
// Session wraps one sequence for single-stream use (CLI generate, tests).
//
// Threading: an Engine is driven by one executor thread; intra-op parallelism is the backend's
// ThreadPool. Not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/decoder.h"
#include "runtime/kv_cache.h"

namespace synapse {

// Which rows of an input want an output: none, the last (generation), the first (a
// bidirectional encoder's CLS row), or all.
enum class LogitsWanted : uint8_t { kNone, kLast, kAll, kFirst };

struct StepInput {
  SeqId sequence = 0;
  std::span<const int32_t> tokens;
  LogitsWanted logits = LogitsWanted::kLast;
  // Which rows' final hidden states (after the final norm: what embedding models pool) are
  // wanted, with the same choices. A row that wants only its hidden state skips the output head.
  LogitsWanted hidden = LogitsWanted::kNone;
  // One token type per token (models with token-type embeddings, e.g. a cross-encoder's query
  // and document); empty: all 0.
  std::span<const int32_t> token_types = {};
  // kAll logits from this token on only: a perplexity pass scores the second half of a chunk,
  // and the output head (a large share of a small model's work) runs for those rows alone.
  size_t logits_from = 0;
};

// Logits of a step: rows of n_logits floats (the vocabulary, or a classifier's labels); input i
// owns rows [first_row[i], first_row[i] + n_rows[i]) (n_rows 0 for kNone, 1 for kLast and kFirst,
// its token count less logits_from for kAll). Hidden states
// likewise: rows of n_embd floats, input i owning [hidden_first_row[i], ... + hidden_n_rows[i]).
struct StepOutput {
  size_t n_logits = 0;
  std::vector<float> logits;
  std::vector<size_t> first_row;
  std::vector<size_t> n_rows;
  size_t n_embd = 0;
  std::vector<float> hidden;
  std::vector<size_t> hidden_first_row;
  std::vector<size_t> hidden_n_rows;
  std::span<const float> row(size_t r) const { return {logits.data() + r * n_logits, n_logits}; }
  // The last logits row of input i (it must have asked for logits).
  std::span<const float> last(size_t i) const { return row(first_row[i] + n_rows[i] - 1); }
  // Input i's hidden rows, back to back (hidden_n_rows[i] * n_embd floats).
  std::span<const float> hidden_rows(size_t i) const {
    return {hidden.data() + hidden_first_row[i] * n_embd, hidden_n_rows[i] * n_embd};
  }
};

struct EngineConfig {
  size_t max_batch_tokens = 512;  // rows per forward pass (prefill chunk size)
  KvCacheConfig kv;
};

class Engine {
 public:
  Engine(DecoderModel& model, const EngineConfig& config = {});

  SeqId new_sequence() { return cache_.create(); }
  Result<SeqId> fork(SeqId source) { return cache_.fork(source); }
  Status release(SeqId seq) { return cache_.release(seq); }
  size_t n_tokens(SeqId seq) const { return cache_.n_tokens(seq); }
  void truncate(SeqId seq, size_t n) { cache_.truncate(seq, n); }

  // Runs the inputs (distinct sequences). Validates everything (sequences exist, token ids in
  // the vocabulary, context) and reserves KV pages before any forward pass runs; a sequence is
  // only advanced by the tokens that ran. On a bidirectional model each input must be a whole
  // sequence (an empty one before the step) and runs unsplit, alone in a pass if it is longer
  // than max_batch_tokens.
  Status step(std::span<const StepInput> inputs, StepOutput& out);

  DecoderModel& model() { return model_; }
  const KvCache& cache() const { return cache_; }
  size_t max_batch_tokens() const { return config_.max_batch_tokens; }

 private:
  DecoderModel& model_;
  EngineConfig config_;
  KvCache cache_;
  // Reused between steps.
  std::vector<int32_t> tokens_;
  std::vector<ForwardSequence> sequences_;
  std::vector<SeqId> sequence_ids_;
  std::vector<uint32_t> output_rows_;
  std::vector<uint32_t> hidden_rows_;
  std::vector<int32_t> token_types_;  // empty when no input of the pass has types
};

// One sequence on an Engine: prefill a prompt, then decode token by token.
class Session {
 public:
  explicit Session(Engine& engine) : engine_(engine), seq_(engine.new_sequence()) {}
  ~Session() { (void)engine_.release(seq_); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Appends tokens; returns the logits after the last one (n_vocab floats, valid until the
  // next call).
  Result<std::span<const float>> append(std::span<const int32_t> tokens);
  // Appends tokens and returns the logits of every one of them ([n][n_vocab]).
  Result<std::span<const float>> append_all(std::span<const int32_t> tokens);
  size_t n_tokens() const { return engine_.n_tokens(seq_); }
  // Keeps the first n tokens (n <= n_tokens()): a speculative step's rejected drafts are dropped.
  void truncate(size_t n) { engine_.truncate(seq_, n); }
  SeqId sequence() const { return seq_; }
  Engine& engine() { return engine_; }

 private:
  Engine& engine_;
  SeqId seq_;
  StepOutput out_;
};

// Greedy choice: the highest logit, ties to the lowest id (as llama.cpp).
int32_t greedy_token(std::span<const float> logits);

}  // namespace synapse
