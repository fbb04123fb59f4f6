// SPDX-License-Identifier: Apache-2.0
// KL divergence of a run against reference logits, with the statistics llama-perplexity's
// --kl-divergence reports: both perplexities and their ratio / difference, the mean KL divergence
// with its standard error and its distribution, the change Δp = p(token) - p_ref(token) of the
// probability of the actual next token, and how often both runs put the same token on top.
// Every per-token quantity is computed in double from the two logit rows; statistics are over
// every scored token in order, so they do not depend on how the work was split.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "eval/perplexity.h"
#include "eval/reference_logits_file.h"

namespace synapse {

struct Distribution {
  double max = 0, p99_9 = 0, p99 = 0, p95 = 0, p90 = 0, median = 0, p10 = 0, p5 = 0, p1 = 0,
         p0_1 = 0, min = 0;
};

struct KlDivergenceReport {
  size_t n_tokens = 0;
  double ppl = 0, ppl_error = 0;                      // this run
  double ppl_reference = 0, ppl_reference_error = 0;  // the reference run
  double ln_ppl_ratio = 0, ln_ppl_ratio_error = 0;    // mean ln(PPL / PPL_ref)
  double ppl_ratio = 0, ppl_ratio_error = 0;
  double ppl_difference = 0, ppl_difference_error = 0;
  double kld_mean = 0, kld_error = 0;
  Distribution kld;
  double delta_p_mean = 0, delta_p_error = 0;  // in probability (not percent)
  double delta_p_rms = 0;
  Distribution delta_p;
  double same_top = 0, same_top_error = 0;  // fraction of tokens with equal argmax
};

class KlDivergenceAccumulator {
 public:
  explicit KlDivergenceAccumulator(size_t n_vocab) : log_p_(n_vocab), log_q_(n_vocab) {}
  // One scored position: the reference row, this run's row and the token that followed.
  void add(std::span<const float> reference, std::span<const float> logits, int32_t target);
  size_t count() const { return kld_.size(); }
  double kld_mean() const;
  double ppl() const { return nll_.ppl(); }
  KlDivergenceReport report() const;

 private:
  std::vector<double> log_p_, log_q_;  // scratch rows
  NllAccumulator nll_, nll_reference_;
  double sum_diff_ = 0, sum_diff_sq_ = 0;  // of nll - nll_reference, for the ratio's error
  std::vector<double> kld_, delta_p_;
  size_t same_top_ = 0;
};

struct KlDivergenceRun {
  KlDivergenceReport report;
  std::vector<double> running_ppl;  // this run's perplexity after each chunk
  std::vector<double> running_kld;  // mean KL divergence after each chunk
};

// Scores the reference file's tokens with `scorer`, chunk by chunk exactly as the reference run
// did (its context, BOS handling and chunk count), against the saved logits. size_mismatch when
// the model's vocabulary differs from the reference's.
Result<KlDivergenceRun> compute_kl_divergence(const ReferenceLogitsFile& reference, size_t n_vocab,
                                              uint32_t n_batch, const ChunkScorer& scorer,
                                              const PerplexityObserver& observer = {});

// Runs the perplexity protocol and saves every chunk's scored logits to `path` (atomically: no
// file appears unless the whole run succeeds).
Result<PerplexityResult> save_reference_logits(const std::string& path,
                                               std::span<const int32_t> tokens,
                                               const PerplexityOptions& options, size_t n_vocab,
                                               const ChunkScorer& scorer,
                                               const PerplexityObserver& observer = {});

// Human-readable report in llama-perplexity's three sections.
std::string format_kl_report(const KlDivergenceReport& report);

}  // namespace synapse
