// SPDX-License-Identifier: Apache-2.0
#include "eval/perplexity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/checked_math.h"
#include "eval/log_softmax.h"

namespace synapse {
namespace {

// The scored logits of one pass are capped so that a large vocabulary with many chunks per pass
// does not take unbounded memory (a 151936-token vocabulary at -c 128: 3 chunks, 115 MiB; the
// runtime holds the logits of every row of a chunk, about twice that). One chunk always runs.
constexpr uint64_t kMaxPassLogitBytes = 128ull << 20;
constexpr uint32_t kMinContext = 4;

Status option_error(std::string message, std::string field) {
  return Status(ErrorCode::kInvalidArgument, std::move(message)).with_field(std::move(field));
}

}  // namespace

Result<ChunkPlan> plan_chunks(size_t n_tokens, const PerplexityOptions& options, size_t n_vocab) {
  if (n_vocab == 0) return Status(ErrorCode::kInvalidArgument, "the model has no vocabulary");
  if (options.n_ctx < kMinContext) {
    return option_error("context of " + std::to_string(options.n_ctx) +
                            " tokens is too small to score (at least " +
                            std::to_string(kMinContext) + ")",
                        "ctx");
  }
  if (options.model_n_ctx != 0 && options.n_ctx > options.model_n_ctx) {
    return option_error("context of " + std::to_string(options.n_ctx) +
                            " tokens exceeds the model's context of " +
                            std::to_string(options.model_n_ctx),
                        "ctx");
  }
  if (options.n_batch == 0) return option_error("batch size must be positive", "batch");
  if (options.add_bos && (options.bos_id < 0 || static_cast<size_t>(options.bos_id) >= n_vocab)) {
    return Status(ErrorCode::kInvalidArgument, "the model adds BOS but has no valid BOS token id");
  }
  const size_t n_ctx = options.n_ctx;
  if (n_tokens < 2 * n_ctx) {
    return option_error("the text has " + std::to_string(n_tokens) +
                            " tokens; perplexity at context " + std::to_string(n_ctx) +
                            " needs at least " + std::to_string(2 * n_ctx) + " (two chunks)",
                        "file");
  }
  ChunkPlan plan;
  plan.n_ctx = n_ctx;
  plan.n_chunks = n_tokens / n_ctx;
  if (options.max_chunks != 0) plan.n_chunks = std::min<size_t>(plan.n_chunks, options.max_chunks);
  plan.first_row = n_ctx / 2;
  plan.n_rows = n_ctx - 1 - plan.first_row;
  const uint64_t chunk_bytes = static_cast<uint64_t>(plan.n_rows) * n_vocab * sizeof(float);
  size_t per_pass = std::max<size_t>(1, options.n_batch / n_ctx);
  per_pass = std::min<size_t>(per_pass, std::max<uint64_t>(1, kMaxPassLogitBytes / chunk_bytes));
  plan.chunks_per_pass = std::min(per_pass, plan.n_chunks);
  return plan;
}

Status run_chunks(std::span<const int32_t> tokens, const ChunkPlan& plan,
                  const PerplexityOptions& options, size_t n_vocab, const ChunkScorer& scorer,
                  const ChunkVisitor& visit) {
  SYN_CHECK(plan.n_chunks * plan.n_ctx <= tokens.size(), "plan exceeds the tokens");
  const size_t row_floats = plan.n_rows * n_vocab;
  std::vector<std::vector<int32_t>> pass;
  std::vector<float> logits;
  for (size_t first_chunk = 0; first_chunk < plan.n_chunks; first_chunk += plan.chunks_per_pass) {
    const size_t count = std::min(plan.chunks_per_pass, plan.n_chunks - first_chunk);
    pass.resize(count);
    for (size_t c = 0; c < count; ++c) {
      const size_t start = (first_chunk + c) * plan.n_ctx;
      pass[c].assign(tokens.begin() + static_cast<ptrdiff_t>(start),
                     tokens.begin() + static_cast<ptrdiff_t>(start + plan.n_ctx));
      if (options.add_bos) pass[c][0] = options.bos_id;
    }
    logits.resize(count * row_floats);
    SYN_RETURN_IF_ERROR(scorer(pass, plan.first_row, plan.n_rows, logits));
    for (size_t c = 0; c < count; ++c) {
      const size_t chunk = first_chunk + c;
      const std::span<const float> rows(logits.data() + c * row_floats, row_floats);
      size_t bad = 0;
      if (!all_finite(rows, &bad)) {
        return Status(ErrorCode::kInternal, "non-finite logit in chunk " +
                                                std::to_string(chunk + 1) + ", row " +
                                                std::to_string(plan.first_row + bad / n_vocab) +
                                                ", token id " + std::to_string(bad % n_vocab));
      }
      const size_t start = chunk * plan.n_ctx;
      const std::span<const int32_t> targets =
          tokens.subspan(start + plan.first_row + 1, plan.n_rows);
      SYN_RETURN_IF_ERROR(visit(chunk, targets, rows));
    }
  }
  return ok_status();
}

double NllAccumulator::ppl() const { return std::exp(mean()); }

double NllAccumulator::ppl_error() const {
  if (count_ < 2) return 0.0;
  const double n = static_cast<double>(count_);
  const double mean = sum_ / n;
  const double variance = sum_sq_ / n - mean * mean;
  if (!(variance > 0.0)) return 0.0;
  return std::exp(mean) * std::sqrt(variance / (n - 1.0));
}

Result<PerplexityResult> compute_perplexity(std::span<const int32_t> tokens,
                                            const PerplexityOptions& options, size_t n_vocab,
                                            const ChunkScorer& scorer,
                                            const PerplexityObserver& observer,
                                            const ChunkVisitor& also) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || static_cast<size_t>(tokens[i]) >= n_vocab) {
      return Status(ErrorCode::kInvalidArgument,
                    "token id " + std::to_string(tokens[i]) + " at position " + std::to_string(i) +
                        " is outside the vocabulary of " + std::to_string(n_vocab));
    }
  }
  SYN_ASSIGN_OR_RETURN(const ChunkPlan plan, plan_chunks(tokens.size(), options, n_vocab));
  PerplexityResult result;
  result.n_chunks = plan.n_chunks;
  NllAccumulator nll;
  SYN_RETURN_IF_ERROR(run_chunks(
      tokens, plan, options, n_vocab, scorer,
      [&](size_t chunk, std::span<const int32_t> targets, std::span<const float> logits) {
        for (size_t r = 0; r < targets.size(); ++r) {
          nll.add(-token_log_prob(logits.subspan(r * n_vocab, n_vocab), targets[r]).log_prob);
        }
        result.running_ppl.push_back(nll.ppl());
        if (also) {
          Status status = also(chunk, targets, logits);
          if (!status.ok()) return status;
        }
        if (observer) observer(chunk, plan.n_chunks, nll.ppl());
        return ok_status();
      }));
  result.ppl = nll.ppl();
  result.ppl_error = nll.ppl_error();
  result.n_scored = nll.count();
  return result;
}

std::string format_running_ppl(size_t chunk, double running) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "[%zu]%.4f,", chunk + 1, running);
  return buffer;
}

std::string format_final_ppl(double ppl, double error) {
  char buffer[96];
  std::snprintf(buffer, sizeof buffer, "Final estimate: PPL = %.4f +/- %.5f", ppl, error);
  return buffer;
}

}  // namespace synapse
