// SPDX-License-Identifier: Apache-2.0
// The llama-perplexity protocol. The whole text is tokenized once (with BOS when the model adds
// one); it is cut into chunks of n_ctx tokens (a partial last chunk is dropped); each chunk runs
// as a fresh sequence whose first token is replaced by BOS when the model adds one; the logits of
// rows [n_ctx/2, n_ctx - 1) score the tokens that follow them, so only the second half of each
// chunk, which has at least n_ctx/2 tokens of context, counts. After each chunk the running
// perplexity exp(mean nll) is reported; the final value carries the standard error of the mean
// nll, scaled by the perplexity, exactly as llama-perplexity prints it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace synapse {

struct PerplexityOptions {
  uint32_t n_ctx = 512;      // tokens per chunk
  uint32_t n_batch = 2048;   // tokens per forward pass: chunks run max(1, n_batch / n_ctx) at once
  uint32_t max_chunks = 0;   // 0: every whole chunk
  uint32_t model_n_ctx = 0;  // the model's trained context, 0 when unknown: n_ctx may not exceed it
  bool add_bos = true;       // the model's add_bos_token
  int32_t bos_id = -1;       // required when add_bos
};

// How a text of n_tokens is cut: n_chunks chunks, scored rows [first_row, first_row + n_rows).
struct ChunkPlan {
  size_t n_chunks = 0;
  size_t n_ctx = 0;
  size_t first_row = 0;
  size_t n_rows = 0;
  size_t chunks_per_pass = 1;
};

// invalid_argument (naming the option) for a text shorter than two chunks, a context larger than
// the model's or too small to score, or a missing BOS id.
Result<ChunkPlan> plan_chunks(size_t n_tokens, const PerplexityOptions& options, size_t n_vocab);

// Runs every chunk (each its own fresh sequence; the chunks of one call are independent) and
// writes the logits of rows [first_row, first_row + n_rows) of each, chunk after chunk, n_vocab
// floats per row, into `logits` (sized chunks.size() * n_rows * n_vocab).
using ChunkScorer = std::function<Status(std::span<const std::vector<int32_t>> chunks,
                                         size_t first_row, size_t n_rows, std::span<float> logits)>;

// Called for every chunk in order: its index, the tokens its scored rows predict (n_rows), and
// the logits of those rows. An error stops the run.
using ChunkVisitor = std::function<Status(size_t chunk, std::span<const int32_t> targets,
                                          std::span<const float> logits)>;

// Drives `scorer` over the plan (BOS substitution included) and hands each chunk to `visit`.
// Non-finite logits are an internal error naming the chunk and row.
Status run_chunks(std::span<const int32_t> tokens, const ChunkPlan& plan,
                  const PerplexityOptions& options, size_t n_vocab, const ChunkScorer& scorer,
                  const ChunkVisitor& visit);

// Sums of the negative log-likelihoods, in the order they are added.
class NllAccumulator {
 public:
  void add(double nll) {
    sum_ += nll;
    sum_sq_ += nll * nll;
    ++count_;
  }
  size_t count() const { return count_; }
  double mean() const { return count_ == 0 ? 0.0 : sum_ / static_cast<double>(count_); }
  double ppl() const;
  // llama-perplexity's error: ppl * sqrt(var(nll) / (count - 1)); 0 when it cannot be estimated.
  double ppl_error() const;

 private:
  double sum_ = 0.0;
  double sum_sq_ = 0.0;
  size_t count_ = 0;
};

struct PerplexityResult {
  double ppl = 0.0;
  double ppl_error = 0.0;
  size_t n_chunks = 0;
  size_t n_scored = 0;              // tokens scored
  std::vector<double> running_ppl;  // after each chunk
};

using PerplexityObserver = std::function<void(size_t chunk, size_t n_chunks, double running)>;

// `also`, when set, sees every chunk's logits too (e.g. to save them as a KL reference).
Result<PerplexityResult> compute_perplexity(std::span<const int32_t> tokens,
                                            const PerplexityOptions& options, size_t n_vocab,
                                            const ChunkScorer& scorer,
                                            const PerplexityObserver& observer = {},
                                            const ChunkVisitor& also = {});

// llama-perplexity's lines: "[1]160.2264,[2]159.0992," (running values, four decimals) and
// "Final estimate: PPL = 117.3305 +/- 4.42150".
std::string format_running_ppl(size_t chunk, double running);
std::string format_final_ppl(double ppl, double error);

}  // namespace synapse
