// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "eval/kl_divergence.h"
#include "eval/log_softmax.h"
#include "eval/perplexity.h"
#include "eval/token_scores.h"

namespace synapse {
namespace {

constexpr size_t kVocab = 37;

// A deterministic stand-in for a model: logits depend on the previous token, the position and
// the token itself, so scoring sees exactly which tokens each chunk ran with.
float fake_logit(int64_t previous, size_t position, size_t token) {
  return std::sin(0.37f * static_cast<float>(previous) + 0.11f * static_cast<float>(position) +
                  0.73f * static_cast<float>(token)) *
         4.0f;
}

struct FakeModel {
  size_t calls = 0;
  std::vector<std::vector<int32_t>> seen;  // every chunk run
  ChunkScorer scorer() {
    return [this](std::span<const std::vector<int32_t>> chunks, size_t first_row, size_t n_rows,
                  std::span<float> logits) {
      ++calls;
      size_t out = 0;
      for (const auto& chunk : chunks) {
        seen.push_back(chunk);
        for (size_t r = first_row; r < first_row + n_rows; ++r) {
          for (size_t t = 0; t < kVocab; ++t) logits[out++] = fake_logit(chunk[r], r, t);
        }
      }
      EXPECT_EQ(out, logits.size());
      return ok_status();
    };
  }
};

std::vector<int32_t> random_tokens(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> tokens(n);
  for (auto& t : tokens) t = static_cast<int32_t>(rng() % kVocab);
  return tokens;
}

// The protocol written out plainly, in long double, as the reference.
double reference_ppl(const std::vector<int32_t>& tokens, size_t n_ctx, bool add_bos, int32_t bos,
                     std::vector<double>* running) {
  const size_t n_chunks = tokens.size() / n_ctx;
  long double nll = 0;
  size_t count = 0;
  for (size_t c = 0; c < n_chunks; ++c) {
    const auto begin = tokens.begin() + static_cast<ptrdiff_t>(c * n_ctx);
    std::vector<int32_t> chunk(begin, begin + static_cast<ptrdiff_t>(n_ctx));
    if (add_bos) chunk[0] = bos;
    for (size_t r = n_ctx / 2; r + 1 < n_ctx; ++r) {
      long double sum = 0;
      for (size_t t = 0; t < kVocab; ++t) {
        sum += std::exp(static_cast<long double>(fake_logit(chunk[r], r, t)));
      }
      const auto target = static_cast<size_t>(tokens[c * n_ctx + r + 1]);
      nll -= std::log(std::exp(static_cast<long double>(fake_logit(chunk[r], r, target))) / sum);
      ++count;
    }
    running->push_back(static_cast<double>(std::exp(nll / count)));
  }
  return static_cast<double>(std::exp(nll / count));
}

TEST(LogSoftmax, TokenLogProbMatchesDoubleReference) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 5.0f);
  std::vector<float> logits(1000);
  for (auto& v : logits) v = normal(rng);
  std::vector<double> full(logits.size());
  log_softmax_row(logits, full);
  for (size_t t : {0u, 17u, 999u}) {
    const TokenLogProb lp = token_log_prob(logits, static_cast<int32_t>(t));
    EXPECT_NEAR(lp.log_prob, full[t], 1e-5);  // float exp per term: ~1e-7 relative each
    EXPECT_NEAR(lp.prob, std::exp(full[t]), 1e-6);
  }
  double total = 0;
  for (double v : full) total += std::exp(v);
  EXPECT_NEAR(total, 1.0, 1e-12);
}

TEST(LogSoftmax, ArgmaxTiesGoToLowestId) {
  const std::vector<float> logits = {1, 3, 3, 2};
  std::vector<double> out(4);
  EXPECT_EQ(log_softmax_row(logits, out), 1);
}

TEST(Perplexity, PlanFollowsTheProtocol) {
  PerplexityOptions o;
  o.n_ctx = 128;
  o.n_batch = 2048;
  o.bos_id = 1;
  auto plan = plan_chunks(128 * 199 + 50, o, 512);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  EXPECT_EQ(plan->n_chunks, 199u);
  EXPECT_EQ(plan->first_row, 64u);
  EXPECT_EQ(plan->n_rows, 63u);  // 199 x 63 = 12537 scored tokens, as llama-perplexity counts
  EXPECT_EQ(plan->chunks_per_pass, 16u);
  o.max_chunks = 5;
  EXPECT_EQ(plan_chunks(128 * 199, o, 512)->n_chunks, 5u);
}

TEST(Perplexity, BadOptionsAreClearErrors) {
  PerplexityOptions o;
  o.n_ctx = 64;
  o.bos_id = 1;
  auto short_text = plan_chunks(127, o, kVocab);
  ASSERT_FALSE(short_text.ok());
  EXPECT_EQ(short_text.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(short_text.status().message().find("needs at least 128"), std::string::npos);
  EXPECT_EQ(short_text.status().where().field, "file");
  EXPECT_FALSE(plan_chunks(0, o, kVocab).ok());  // an empty file
  o.model_n_ctx = 32;
  auto too_long = plan_chunks(1000, o, kVocab);
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.status().where().field, "ctx");
  o.model_n_ctx = 0;
  o.n_ctx = 2;
  EXPECT_FALSE(plan_chunks(1000, o, kVocab).ok());
  o.n_ctx = 64;
  o.bos_id = -1;
  EXPECT_FALSE(plan_chunks(1000, o, kVocab).ok());
  o.add_bos = false;
  EXPECT_TRUE(plan_chunks(1000, o, kVocab).ok());
}

TEST(Perplexity, MatchesThePlainProtocol) {
  const auto tokens = random_tokens(1000, 3);
  for (bool add_bos : {true, false}) {
    PerplexityOptions o;
    o.n_ctx = 64;
    o.add_bos = add_bos;
    o.bos_id = 5;
    FakeModel model;
    std::vector<size_t> observed;
    auto result =
        compute_perplexity(tokens, o, kVocab, model.scorer(),
                           [&](size_t chunk, size_t, double) { observed.push_back(chunk); });
    ASSERT_TRUE(result.ok()) << result.status().to_string();
    std::vector<double> running;
    const double expected = reference_ppl(tokens, 64, add_bos, 5, &running);
    EXPECT_NEAR(result->ppl, expected, 1e-6 * expected);
    ASSERT_EQ(result->running_ppl.size(), running.size());
    for (size_t i = 0; i < running.size(); ++i) {
      EXPECT_NEAR(result->running_ppl[i], running[i], 1e-6 * running[i]);
    }
    EXPECT_EQ(result->n_chunks, 15u);
    EXPECT_EQ(result->n_scored, 15u * 31u);
    EXPECT_EQ(observed.size(), 15u);
    ASSERT_EQ(model.seen.size(), 15u);
    // Each chunk ran fresh, with BOS in front exactly when the model adds one.
    for (size_t c = 0; c < 15; ++c) {
      EXPECT_EQ(model.seen[c][0], add_bos ? 5 : tokens[c * 64]);
      EXPECT_TRUE(std::equal(model.seen[c].begin() + 1, model.seen[c].end(),
                             tokens.begin() + static_cast<ptrdiff_t>(c * 64 + 1)));
    }
  }
}

TEST(Perplexity, ChunksPerPassDoNotChangeAnyBit) {
  const auto tokens = random_tokens(1200, 9);
  PerplexityOptions o;
  o.n_ctx = 64;
  o.bos_id = 2;
  std::vector<PerplexityResult> results;
  for (uint32_t batch : {16u, 64u, 256u, 4096u}) {
    o.n_batch = batch;
    FakeModel model;
    auto r = compute_perplexity(tokens, o, kVocab, model.scorer());
    ASSERT_TRUE(r.ok());
    results.push_back(*r);
  }
  for (const auto& r : results) {
    EXPECT_EQ(r.ppl, results[0].ppl);
    EXPECT_EQ(r.ppl_error, results[0].ppl_error);
    EXPECT_EQ(r.running_ppl, results[0].running_ppl);
  }
}

TEST(Perplexity, UniformLogitsGiveTheVocabularySize) {
  const auto tokens = random_tokens(256, 1);
  PerplexityOptions o;
  o.n_ctx = 32;
  o.add_bos = false;
  auto r = compute_perplexity(
      tokens, o, kVocab,
      [](std::span<const std::vector<int32_t>>, size_t, size_t, std::span<float> logits) {
        std::fill(logits.begin(), logits.end(), 0.5f);
        return ok_status();
      });
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->ppl, static_cast<double>(kVocab), 1e-9);
  EXPECT_NEAR(r->ppl_error, 0.0, 1e-5);  // sum_sq/n - mean^2 rounds, as in llama-perplexity
}

TEST(Perplexity, NonFiniteLogitsAndBadTokensAreErrors) {
  PerplexityOptions o;
  o.n_ctx = 16;
  o.add_bos = false;
  const auto tokens = random_tokens(64, 4);
  auto nan = compute_perplexity(
      tokens, o, kVocab,
      [](std::span<const std::vector<int32_t>>, size_t, size_t, std::span<float> logits) {
        std::fill(logits.begin(), logits.end(), 0.0f);
        logits[40] = NAN;
        return ok_status();
      });
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.status().message().find("non-finite"), std::string::npos);
  auto bad = tokens;
  bad[10] = static_cast<int32_t>(kVocab);
  FakeModel model;
  EXPECT_FALSE(compute_perplexity(bad, o, kVocab, model.scorer()).ok());
}

TEST(Perplexity, ErrorEstimateAndFormatting) {
  NllAccumulator acc;
  for (double v : {1.0, 2.0, 3.0, 4.0}) acc.add(v);
  // mean 2.5, population variance 1.25, error = e^2.5 * sqrt(1.25 / 3)
  EXPECT_NEAR(acc.ppl(), std::exp(2.5), 1e-12);
  EXPECT_NEAR(acc.ppl_error(), std::exp(2.5) * std::sqrt(1.25 / 3.0), 1e-12);
  EXPECT_EQ(format_final_ppl(117.33052, 4.421504), "Final estimate: PPL = 117.3305 +/- 4.42150");
  EXPECT_EQ(format_running_ppl(0, 160.22641), "[1]160.2264,");
}

TEST(KlDivergence, SelfComparisonIsExactlyZero) {
  KlDivergenceAccumulator acc(kVocab);
  std::vector<float> row(kVocab);
  for (int32_t i = 0; i < 50; ++i) {
    for (size_t t = 0; t < kVocab; ++t) row[t] = fake_logit(i, 3, t);
    acc.add(row, row, i % static_cast<int32_t>(kVocab));
  }
  const auto r = acc.report();
  EXPECT_EQ(r.n_tokens, 50u);
  EXPECT_EQ(r.kld_mean, 0.0);
  EXPECT_EQ(r.kld.max, 0.0);
  EXPECT_EQ(r.delta_p_mean, 0.0);
  EXPECT_EQ(r.same_top, 1.0);
  EXPECT_EQ(r.ppl, r.ppl_reference);
  EXPECT_EQ(r.ln_ppl_ratio, 0.0);
}

TEST(KlDivergence, MatchesClosedFormForTwoTokens) {
  // p = softmax(0, 0) = (1/2, 1/2); q = softmax(0, ln 3) = (1/4, 3/4).
  KlDivergenceAccumulator acc(2);
  const std::vector<float> p = {0.0f, 0.0f};
  const std::vector<float> q = {0.0f, std::log(3.0f)};
  acc.add(p, q, 0);
  const auto r = acc.report();
  const double expected = 0.5 * std::log(0.5 / 0.25) + 0.5 * std::log(0.5 / 0.75);
  EXPECT_NEAR(r.kld_mean, expected, 1e-7);
  EXPECT_NEAR(r.delta_p_mean, 0.25 - 0.5, 1e-7);
  EXPECT_EQ(r.same_top, 0.0);  // argmax 0 (tie, lowest id) vs 1
  EXPECT_NEAR(r.ppl / r.ppl_reference, 2.0, 1e-6);
  EXPECT_NE(format_kl_report(r).find("Mean    KLD:"), std::string::npos);
}

TEST(KlDivergence, PerturbedRowsArePositiveAndStable) {
  std::mt19937 rng(11);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  KlDivergenceAccumulator acc(kVocab);
  std::vector<float> base(kVocab), other(kVocab);
  for (int32_t i = 0; i < 400; ++i) {
    for (size_t t = 0; t < kVocab; ++t) {
      base[t] = fake_logit(i, 1, t);
      other[t] = base[t] + noise(rng);
    }
    acc.add(base, other, i % static_cast<int32_t>(kVocab));
  }
  const auto r = acc.report();
  EXPECT_GT(r.kld_mean, 0.0);
  EXPECT_GT(r.kld_error, 0.0);
  EXPECT_LT(r.same_top, 1.0);
  EXPECT_LE(r.kld.min, r.kld.median);
  EXPECT_LE(r.kld.median, r.kld.max);
}

TEST(TokenScores, ScoresEveryTokenAfterTheFirst) {
  const std::vector<int32_t> tokens = {1, 4, 9, 16, 25, 36};
  FakeModel model;
  auto r = score_sequence(tokens, kVocab, 0, model.scorer());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->tokens.size(), 5u);
  double sum = 0;
  for (size_t i = 0; i < 5; ++i) {
    std::vector<float> row(kVocab);
    for (size_t t = 0; t < kVocab; ++t) row[t] = fake_logit(tokens[i], i, t);
    std::vector<double> lp(kVocab);
    log_softmax_row(row, lp);
    EXPECT_EQ(r->tokens[i].id, tokens[i + 1]);
    EXPECT_NEAR(r->tokens[i].log_prob, lp[static_cast<size_t>(tokens[i + 1])], 1e-5);
    sum += r->tokens[i].log_prob;
  }
  EXPECT_DOUBLE_EQ(r->sum_log_prob, sum);
  EXPECT_FALSE(score_sequence(std::vector<int32_t>{1}, kVocab, 0, model.scorer()).ok());
  EXPECT_FALSE(score_sequence(tokens, kVocab, 4, model.scorer()).ok());  // longer than context
}

}  // namespace
}  // namespace synapse

namespace synapse {
namespace {

TEST(KlDivergence, SavedReferenceAgainstItselfAndAPerturbedModel) {
  const std::string path = ::testing::TempDir() + "synapse_kld_roundtrip.logits";
  const auto tokens = random_tokens(700, 21);
  PerplexityOptions o;
  o.n_ctx = 64;
  o.bos_id = 3;
  o.max_chunks = 1;  // one chunk is allowed; the text still has two
  FakeModel reference_model;
  auto saved = save_reference_logits(path, tokens, o, kVocab, reference_model.scorer());
  ASSERT_TRUE(saved.ok()) << saved.status().to_string();
  o.max_chunks = 0;
  auto all = save_reference_logits(path, tokens, o, kVocab, reference_model.scorer());
  ASSERT_TRUE(all.ok());
  auto file = ReferenceLogitsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ(file->header().n_chunks, 10u);

  FakeModel same;
  auto self = compute_kl_divergence(*file, kVocab, 256, same.scorer());
  ASSERT_TRUE(self.ok()) << self.status().to_string();
  EXPECT_EQ(self->report.kld_mean, 0.0);
  EXPECT_EQ(self->report.same_top, 1.0);
  // The KL path computes log-probabilities fully in double, the perplexity path as
  // llama-perplexity does (float exp terms): equal to ~1e-7.
  EXPECT_NEAR(self->report.ppl, all->ppl, 1e-6 * all->ppl);
  ASSERT_EQ(self->running_ppl.size(), all->running_ppl.size());

  // A model whose logits are slightly off: positive divergence, stable across batch sizes.
  FakeModel inner;
  auto noisy = [&inner](std::span<const std::vector<int32_t>> chunks, size_t first, size_t n,
                        std::span<float> logits) {
    SYN_RETURN_IF_ERROR(inner.scorer()(chunks, first, n, logits));
    for (float& v : logits) v += 0.2f * std::sin(7.0f * v);
    return ok_status();
  };
  auto q1 = compute_kl_divergence(*file, kVocab, 64, noisy);
  auto q2 = compute_kl_divergence(*file, kVocab, 4096, noisy);
  ASSERT_TRUE(q1.ok() && q2.ok());
  EXPECT_GT(q1->report.kld_mean, 0.0);
  EXPECT_EQ(q1->report.kld_mean, q2->report.kld_mean);
  EXPECT_EQ(q1->running_kld.size(), 10u);

  auto wrong_vocab = compute_kl_divergence(*file, kVocab + 1, 64, same.scorer());
  ASSERT_FALSE(wrong_vocab.ok());
  EXPECT_EQ(wrong_vocab.status().code(), ErrorCode::kSizeMismatch);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace synapse
