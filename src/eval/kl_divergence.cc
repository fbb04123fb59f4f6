// SPDX-License-Identifier: Apache-2.0
#include "eval/kl_divergence.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "base/check.h"
#include "eval/log_softmax.h"

namespace synapse {
namespace {

struct MeanError {
  double mean = 0, error = 0;
};

// Mean and standard error of the mean (sample variance / (n - 1)).
MeanError mean_error(std::span<const double> values) {
  MeanError out;
  if (values.empty()) return out;
  double sum = 0, sum_sq = 0;
  for (double v : values) {
    sum += v;
    sum_sq += v * v;
  }
  const double n = static_cast<double>(values.size());
  out.mean = sum / n;
  if (values.size() > 1) {
    const double variance = sum_sq / n - out.mean * out.mean;
    out.error = variance > 0 ? std::sqrt(variance / (n - 1)) : 0.0;
  }
  return out;
}

// The value at fraction q of the sorted values, interpolating linearly between neighbours.
double quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double position = q * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double t = position - static_cast<double>(below);
  return sorted[below] + t * (sorted[above] - sorted[below]);
}

Distribution distribution(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  Distribution d;
  if (values.empty()) return d;
  d.max = values.back();
  d.p99_9 = quantile(values, 0.999);
  d.p99 = quantile(values, 0.99);
  d.p95 = quantile(values, 0.95);
  d.p90 = quantile(values, 0.90);
  d.median = quantile(values, 0.5);
  d.p10 = quantile(values, 0.10);
  d.p5 = quantile(values, 0.05);
  d.p1 = quantile(values, 0.01);
  d.p0_1 = quantile(values, 0.001);
  d.min = values.front();
  return d;
}

__attribute__((format(printf, 2, 3))) void appendf(std::string& out, const char* format, ...) {
  char line[160];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  out += line;
}

}  // namespace

void KlDivergenceAccumulator::add(std::span<const float> reference, std::span<const float> logits,
                                  int32_t target) {
  SYN_CHECK(reference.size() == log_p_.size() && logits.size() == log_q_.size(),
            "row width differs from the vocabulary");
  const int32_t top_p = log_softmax_row(reference, log_p_);
  const int32_t top_q = log_softmax_row(logits, log_q_);
  double kld = 0.0;
  for (size_t i = 0; i < log_p_.size(); ++i) {
    const double p = std::exp(log_p_[i]);
    kld += p * (log_p_[i] - log_q_[i]);
  }
  // Rounding can leave a tiny negative sum for nearly equal rows; KL divergence is >= 0.
  kld_.push_back(std::max(0.0, kld));
  const size_t t = static_cast<size_t>(target);
  delta_p_.push_back(std::exp(log_q_[t]) - std::exp(log_p_[t]));
  if (top_p == top_q) ++same_top_;
  const double nll = -log_q_[t];
  const double nll_reference = -log_p_[t];
  nll_.add(nll);
  nll_reference_.add(nll_reference);
  sum_diff_ += nll - nll_reference;
  sum_diff_sq_ += (nll - nll_reference) * (nll - nll_reference);
}

double KlDivergenceAccumulator::kld_mean() const { return mean_error(kld_).mean; }

KlDivergenceReport KlDivergenceAccumulator::report() const {
  KlDivergenceReport r;
  r.n_tokens = kld_.size();
  if (r.n_tokens == 0) return r;
  const double n = static_cast<double>(r.n_tokens);
  r.ppl = nll_.ppl();
  r.ppl_error = nll_.ppl_error();
  r.ppl_reference = nll_reference_.ppl();
  r.ppl_reference_error = nll_reference_.ppl_error();
  r.ln_ppl_ratio = sum_diff_ / n;
  if (r.n_tokens > 1) {
    const double variance = sum_diff_sq_ / n - r.ln_ppl_ratio * r.ln_ppl_ratio;
    r.ln_ppl_ratio_error = variance > 0 ? std::sqrt(variance / (n - 1)) : 0.0;
  }
  r.ppl_ratio = std::exp(r.ln_ppl_ratio);
  r.ppl_ratio_error = r.ppl_ratio * r.ln_ppl_ratio_error;
  r.ppl_difference = r.ppl - r.ppl_reference;
  // The difference's error by the delta method from the paired ln-ratio: both perplexities move
  // together, so their errors must not be added as if independent.
  r.ppl_difference_error = r.ppl_reference * r.ppl_ratio * r.ln_ppl_ratio_error;
  const MeanError kld = mean_error(kld_);
  r.kld_mean = kld.mean;
  r.kld_error = kld.error;
  r.kld = distribution(kld_);
  const MeanError dp = mean_error(delta_p_);
  r.delta_p_mean = dp.mean;
  r.delta_p_error = dp.error;
  double sum_sq = 0;
  for (double v : delta_p_) sum_sq += v * v;
  r.delta_p_rms = std::sqrt(sum_sq / n);
  r.delta_p = distribution(delta_p_);
  r.same_top = static_cast<double>(same_top_) / n;
  if (r.n_tokens > 1) r.same_top_error = std::sqrt(r.same_top * (1 - r.same_top) / (n - 1));
  return r;
}

Result<KlDivergenceRun> compute_kl_divergence(const ReferenceLogitsFile& reference, size_t n_vocab,
                                              uint32_t n_batch, const ChunkScorer& scorer,
                                              const PerplexityObserver& observer) {
  const ReferenceLogitsHeader& h = reference.header();
  if (h.n_vocab != n_vocab) {
    return Status(ErrorCode::kSizeMismatch,
                  "the reference logits have a vocabulary of " + std::to_string(h.n_vocab) +
                      " tokens; this model has " + std::to_string(n_vocab));
  }
  PerplexityOptions options;
  options.n_ctx = h.n_ctx;
  options.n_batch = n_batch;
  options.max_chunks = h.n_chunks;
  options.add_bos = h.add_bos;
  options.bos_id = h.bos_id;
  SYN_ASSIGN_OR_RETURN(const ChunkPlan plan, plan_chunks(h.n_tokens, options, n_vocab));
  if (plan.n_chunks != h.n_chunks || plan.first_row != h.first_row || plan.n_rows != h.n_rows) {
    return Status(ErrorCode::kBadValue, "the reference's chunks do not follow the protocol");
  }
  KlDivergenceAccumulator acc(n_vocab);
  KlDivergenceRun run;
  SYN_RETURN_IF_ERROR(run_chunks(
      reference.tokens(), plan, options, n_vocab, scorer,
      [&](size_t chunk, std::span<const int32_t> targets, std::span<const float> logits) {
        const std::span<const float> base = reference.chunk_logits(chunk);
        size_t bad = 0;
        if (!all_finite(base, &bad)) {
          return Status(ErrorCode::kBadValue,
                        "non-finite logit in the reference, chunk " + std::to_string(chunk + 1));
        }
        for (size_t r = 0; r < targets.size(); ++r) {
          acc.add(base.subspan(r * n_vocab, n_vocab), logits.subspan(r * n_vocab, n_vocab),
                  targets[r]);
        }
        run.running_ppl.push_back(acc.ppl());
        run.running_kld.push_back(acc.kld_mean());
        if (observer) observer(chunk, plan.n_chunks, acc.ppl());
        return ok_status();
      }));
  run.report = acc.report();
  return run;
}

Result<PerplexityResult> save_reference_logits(const std::string& path,
                                               std::span<const int32_t> tokens,
                                               const PerplexityOptions& options, size_t n_vocab,
                                               const ChunkScorer& scorer,
                                               const PerplexityObserver& observer) {
  SYN_ASSIGN_OR_RETURN(const ChunkPlan plan, plan_chunks(tokens.size(), options, n_vocab));
  ReferenceLogitsHeader h;
  h.n_vocab = static_cast<uint32_t>(n_vocab);
  h.n_ctx = static_cast<uint32_t>(plan.n_ctx);
  h.n_chunks = static_cast<uint32_t>(plan.n_chunks);
  h.first_row = static_cast<uint32_t>(plan.first_row);
  h.n_rows = static_cast<uint32_t>(plan.n_rows);
  h.add_bos = options.add_bos;
  h.bos_id = options.add_bos ? options.bos_id : -1;
  h.n_tokens = tokens.size();
  SYN_ASSIGN_OR_RETURN(ReferenceLogitsWriter writer,
                       ReferenceLogitsWriter::create(path, h, tokens));
  SYN_ASSIGN_OR_RETURN(
      PerplexityResult result,
      compute_perplexity(tokens, options, n_vocab, scorer, observer,
                         [&](size_t, std::span<const int32_t>, std::span<const float> logits) {
                           return writer.append_chunk(logits);
                         }));
  SYN_RETURN_IF_ERROR(writer.commit());
  return result;
}

std::string format_kl_report(const KlDivergenceReport& r) {
  std::string out;
  auto add = [&out](const char* text) {
    out += text;
    out += '\n';
  };
  add("====== Perplexity statistics ======");
  appendf(out, "Mean PPL(Q)                   : %10.6f +/- %10.6f\n", r.ppl, r.ppl_error);
  appendf(out, "Mean PPL(base)                : %10.6f +/- %10.6f\n", r.ppl_reference,
          r.ppl_reference_error);
  appendf(out, "Mean ln(PPL(Q)/PPL(base))     : %10.6f +/- %10.6f\n", r.ln_ppl_ratio,
          r.ln_ppl_ratio_error);
  appendf(out, "Mean PPL(Q)/PPL(base)         : %10.6f +/- %10.6f\n", r.ppl_ratio,
          r.ppl_ratio_error);
  appendf(out, "Mean PPL(Q)-PPL(base)         : %10.6f +/- %10.6f\n", r.ppl_difference,
          r.ppl_difference_error);
  out += '\n';
  add("====== KL divergence statistics ======");
  appendf(out, "Mean    KLD: %10.6f +/- %10.6f\n", r.kld_mean, r.kld_error);
  appendf(out, "Maximum KLD: %10.6f\n", r.kld.max);
  appendf(out, "99.9%%   KLD: %10.6f\n", r.kld.p99_9);
  appendf(out, "99.0%%   KLD: %10.6f\n", r.kld.p99);
  appendf(out, "95.0%%   KLD: %10.6f\n", r.kld.p95);
  appendf(out, "90.0%%   KLD: %10.6f\n", r.kld.p90);
  appendf(out, "Median  KLD: %10.6f\n", r.kld.median);
  appendf(out, "10.0%%   KLD: %10.6f\n", r.kld.p10);
  appendf(out, " 5.0%%   KLD: %10.6f\n", r.kld.p5);
  appendf(out, " 1.0%%   KLD: %10.6f\n", r.kld.p1);
  appendf(out, " 0.1%%   KLD: %10.6f\n", r.kld.p0_1);
  appendf(out, "Minimum KLD: %10.6f\n", r.kld.min);
  out += '\n';
  add("====== Token probability statistics ======");
  appendf(out, "Mean    Δp: %8.3f +/- %.3f %%\n", 100 * r.delta_p_mean, 100 * r.delta_p_error);
  appendf(out, "Maximum Δp: %8.3f%%\n", 100 * r.delta_p.max);
  appendf(out, "99.9%%   Δp: %8.3f%%\n", 100 * r.delta_p.p99_9);
  appendf(out, "99.0%%   Δp: %8.3f%%\n", 100 * r.delta_p.p99);
  appendf(out, "95.0%%   Δp: %8.3f%%\n", 100 * r.delta_p.p95);
  appendf(out, "90.0%%   Δp: %8.3f%%\n", 100 * r.delta_p.p90);
  appendf(out, "Median  Δp: %8.3f%%\n", 100 * r.delta_p.median);
  appendf(out, "10.0%%   Δp: %8.3f%%\n", 100 * r.delta_p.p10);
  appendf(out, " 5.0%%   Δp: %8.3f%%\n", 100 * r.delta_p.p5);
  appendf(out, " 1.0%%   Δp: %8.3f%%\n", 100 * r.delta_p.p1);
  appendf(out, " 0.1%%   Δp: %8.3f%%\n", 100 * r.delta_p.p0_1);
  appendf(out, "Minimum Δp: %8.3f%%\n", 100 * r.delta_p.min);
  appendf(out, "RMS Δp    : %8.3f %%\n", 100 * r.delta_p_rms);
  appendf(out, "Same top p: %8.3f +/- %.3f %%\n", 100 * r.same_top, 100 * r.same_top_error);
  return out;
}

}  // namespace synapse
