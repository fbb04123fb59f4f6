// SPDX-License-Identifier: Apache-2.0
#include "sample/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

namespace synapse {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Parameters with every filter off, temperature 1: plain softmax sampling.
SamplingParams plain_params(uint64_t seed = 1) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

Sampler make_sampler(const SamplingParams& params, int32_t n_vocab) {
  Result<Sampler> sampler = Sampler::create(params, n_vocab);
  EXPECT_TRUE(sampler.ok()) << sampler.status().to_string();
  return std::move(sampler).value();
}

// Random logits in [-8, 8); about a third are rounded to multiples of 0.5 so that ties occur.
std::vector<float> random_logits(PortableRandom& random, size_t n) {
  std::vector<float> logits(n);
  for (float& x : logits) {
    x = static_cast<float>(random.next_unit() * 16.0 - 8.0);
    if (random.next_u64() % 3 == 0) x = std::round(x * 2.0f) / 2.0f;
  }
  return logits;
}

// The brute-force reference: the whole vocabulary copied, fully sorted, every step spelled out as
// llama.cpp does it, in double with libm's exp.
std::vector<TokenProb> reference_distribution(std::vector<float> v, const SamplingParams& p,
                                              const std::vector<int32_t>& accepted) {
  for (const LogitBias& b : p.logit_bias) v[static_cast<size_t>(b.token)] += b.bias;
  std::map<int32_t, int32_t> counts;
  if (p.penalty_last_n != 0) {
    size_t first = 0;
    if (p.penalty_last_n > 0 && accepted.size() > static_cast<size_t>(p.penalty_last_n)) {
      first = accepted.size() - static_cast<size_t>(p.penalty_last_n);
    }
    for (size_t i = first; i < accepted.size(); ++i) ++counts[accepted[i]];
  }
  for (const auto& [token, count] : counts) {
    float& x = v[static_cast<size_t>(token)];
    x = x <= 0.0f ? x * p.repeat_penalty : x / p.repeat_penalty;
    x -= static_cast<float>(count) * p.frequency_penalty + p.presence_penalty;
  }
  std::vector<TokenProb> c;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] > -kInf) c.push_back({static_cast<int32_t>(i), v[i], 0.0});
  }
  std::sort(c.begin(), c.end(), [](const TokenProb& a, const TokenProb& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.token < b.token);
  });
  if (c.empty()) return c;
  if (p.temperature <= 0.0f) return {{c[0].token, c[0].logit, 1.0}};
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < c.size())
    c.resize(static_cast<size_t>(p.top_k));
  const double max = c[0].logit;
  const auto weight = [&](const TokenProb& t) { return std::exp(double{t.logit} - max); };
  if (p.top_p < 1.0f) {
    double total = 0.0;
    for (const TokenProb& t : c) total += weight(t);
    double cumulative = 0.0;
    for (size_t i = 0; i < c.size(); ++i) {
      cumulative += weight(c[i]) / total;
      if (cumulative >= double{p.top_p}) {
        c.resize(i + 1);
        break;
      }
    }
  }
  if (p.min_p > 0.0f) {
    std::erase_if(c, [&](const TokenProb& t) { return weight(t) < double{p.min_p}; });
  }
  double total = 0.0;
  for (TokenProb& t : c) {
    t.prob = std::exp((double{t.logit} - max) / double{p.temperature});
    total += t.prob;
  }
  for (TokenProb& t : c) t.prob /= total;
  return c;
}

// Compares the sampler's distribution with the reference as sets of (token, logit, prob).
void expect_same_distribution(std::span<const TokenProb> got_span, std::vector<TokenProb> want,
                              const std::string& context) {
  std::vector<TokenProb> got(got_span.begin(), got_span.end());
  const auto by_token = [](const TokenProb& a, const TokenProb& b) { return a.token < b.token; };
  std::sort(got.begin(), got.end(), by_token);
  std::sort(want.begin(), want.end(), by_token);
  ASSERT_EQ(got.size(), want.size()) << context;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].token, want[i].token) << context;
    EXPECT_EQ(got[i].logit, want[i].logit) << context << " token " << got[i].token;
    // portable_exp and libm's exp agree to a few ulps; sums of up to a few thousand terms.
    EXPECT_NEAR(got[i].prob, want[i].prob, 1e-12) << context << " token " << got[i].token;
  }
}

// Runs `n_cases` random cases: random vocabulary, logits and accepted history; `tweak` sets the
// parameters under test from the case's random stream.
template <typename Tweak>
void check_against_reference(int n_cases, Tweak tweak) {
  for (int c = 0; c < n_cases; ++c) {
    PortableRandom random(1000 + static_cast<uint64_t>(c));
    const auto n_vocab = static_cast<int32_t>(2 + random.next_u64() % 3000);
    const std::vector<float> logits = random_logits(random, static_cast<size_t>(n_vocab));
    SamplingParams params = plain_params(static_cast<uint64_t>(c));
    std::vector<int32_t> accepted;
    tweak(random, params, accepted, n_vocab);
    Sampler sampler = make_sampler(params, n_vocab);
    sampler.accept(accepted);
    Result<std::span<const TokenProb>> dist = sampler.distribution(logits);
    ASSERT_TRUE(dist.ok()) << dist.status().to_string();
    expect_same_distribution(*dist, reference_distribution(logits, params, accepted),
                             "case " + std::to_string(c) + " n_vocab " + std::to_string(n_vocab));
    if (::testing::Test::HasFailure()) return;
  }
}

float random_in(PortableRandom& random, double lo, double hi) {
  return static_cast<float>(lo + random.next_unit() * (hi - lo));
}

TEST(Sampler, GreedyIsArgmaxWithTiesToLowestId) {
  SamplingParams p = plain_params();
  p.temperature = 0.0f;
  Sampler sampler = make_sampler(p, 6);
  const std::vector<float> logits = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f, 3.0f};
  for (int i = 0; i < 3; ++i) {
    Result<int32_t> token = sampler.sample(logits);
    ASSERT_TRUE(token.ok());
    EXPECT_EQ(*token, 1);
  }
  // The same over a vocabulary long enough for the block-wise scan (six logits never reach it):
  // ties inside one block and across blocks.
  constexpr int32_t kWideVocab = 1000;
  std::vector<float> wide(kWideVocab, 0.0f);
  wide[300] = wide[301] = wide[700] = 5.0f;
  Sampler wide_sampler = make_sampler(p, kWideVocab);
  Result<int32_t> wide_token = wide_sampler.sample(wide);
  ASSERT_TRUE(wide_token.ok());
  EXPECT_EQ(*wide_token, 300);
  p.temperature = -1.0f;  // invalid: negative temperature is rejected, not treated as greedy
  EXPECT_FALSE(Sampler::create(p, 6).ok());
}

TEST(Sampler, GreedyTiesCreatedByBiasGoToLowestId) {
  SamplingParams p = plain_params();
  p.temperature = 0.0f;
  p.logit_bias = {{5, 2.0f}, {4, 2.5f}};  // token 4: 0.5+2.5 = 3 ties token 1; token 5: 5
  Sampler sampler = make_sampler(p, 6);
  std::vector<float> logits = {1.0f, 3.0f, -2.0f, 2.0f, 0.5f, 3.0f};
  EXPECT_EQ(*sampler.sample(logits), 5);
  logits[5] = 0.0f;
  EXPECT_EQ(*sampler.sample(logits), 1);
}

TEST(Sampler, TopKMatchesReference) {
  check_against_reference(150, [](PortableRandom& r, SamplingParams& p, auto&, int32_t n) {
    const uint64_t pick = r.next_u64() % 4;
    p.top_k = pick == 0   ? 1
              : pick == 1 ? static_cast<int32_t>(1 + r.next_u64() % 64)
              : pick == 2 ? static_cast<int32_t>(1 + r.next_u64() % static_cast<uint64_t>(n))
                          : n + 5;
  });
}

TEST(Sampler, TopPMatchesReference) {
  check_against_reference(150, [](PortableRandom& r, SamplingParams& p, auto&, int32_t) {
    p.top_p = random_in(r, 0.01, 1.0);
    // Half the cases without top-k: the partial-sort path over the whole vocabulary.
    if (r.next_u64() % 2 == 0) p.top_k = static_cast<int32_t>(1 + r.next_u64() % 100);
  });
}

TEST(Sampler, MinPMatchesReference) {
  check_against_reference(150, [](PortableRandom& r, SamplingParams& p, auto&, int32_t) {
    p.min_p = random_in(r, 0.0, 1.0);
    if (r.next_u64() % 2 == 0) p.top_k = static_cast<int32_t>(1 + r.next_u64() % 100);
  });
}

TEST(Sampler, TemperatureMatchesReference) {
  check_against_reference(150, [](PortableRandom& r, SamplingParams& p, auto&, int32_t) {
    p.temperature = random_in(r, 0.05, 3.0);
  });
}

TEST(Sampler, PenaltiesAndBiasMatchReference) {
  check_against_reference(
      150, [](PortableRandom& r, SamplingParams& p, std::vector<int32_t>& accepted, int32_t n) {
        p.repeat_penalty = random_in(r, 0.5, 2.0);
        p.frequency_penalty = random_in(r, -1.0, 1.0);
        p.presence_penalty = random_in(r, -1.0, 1.0);
        const uint64_t window = r.next_u64() % 4;
        p.penalty_last_n = window == 0 ? -1 : static_cast<int32_t>(r.next_u64() % 100);
        const size_t n_accepted = r.next_u64() % 300;
        // Draw from a few tokens so that counts above one occur.
        const uint64_t spread = 1 + r.next_u64() % static_cast<uint64_t>(n);
        for (size_t i = 0; i < n_accepted; ++i) {
          accepted.push_back(static_cast<int32_t>(r.next_u64() % spread));
        }
        const size_t n_bias = r.next_u64() % 8;
        for (size_t i = 0; i < n_bias; ++i) {
          const auto token = static_cast<int32_t>(r.next_u64() % static_cast<uint64_t>(n));
          p.logit_bias.push_back({token, i == 0 ? -kInf : random_in(r, -5.0, 5.0)});
        }
      });
}

TEST(Sampler, FullChainMatchesReference) {
  check_against_reference(
      150, [](PortableRandom& r, SamplingParams& p, std::vector<int32_t>& accepted, int32_t n) {
        p.temperature = random_in(r, 0.1, 2.0);
        p.top_k = static_cast<int32_t>(r.next_u64() % 80);  // 0 = off
        p.top_p = random_in(r, 0.5, 1.0);
        p.min_p = random_in(r, 0.0, 0.2);
        p.repeat_penalty = random_in(r, 1.0, 1.5);
        p.presence_penalty = random_in(r, 0.0, 0.5);
        for (int i = 0; i < 100; ++i) {
          accepted.push_back(static_cast<int32_t>(r.next_u64() % static_cast<uint64_t>(n)));
        }
      });
}

TEST(Sampler, PenaltiesExactlyAsSpecified) {
  SamplingParams p = plain_params();
  p.repeat_penalty = 2.0f;
  p.frequency_penalty = 0.25f;
  p.presence_penalty = 0.5f;
  p.penalty_last_n = 3;
  Sampler sampler = make_sampler(p, 5);
  const std::vector<float> logits = {2.0f, -2.0f, 1.0f, 0.0f, 3.0f};
  sampler.accept(std::vector<int32_t>{4, 0, 1, 1});  // token 4 has left the 3-token window
  Result<std::span<const TokenProb>> dist = sampler.distribution(logits);
  ASSERT_TRUE(dist.ok());
  std::map<int32_t, float> got;
  for (const TokenProb& t : *dist) got[t.token] = t.logit;
  EXPECT_EQ(got[0], 2.0f / 2.0f - (1 * 0.25f + 0.5f));   // positive: divided
  EXPECT_EQ(got[1], -2.0f * 2.0f - (2 * 0.25f + 0.5f));  // negative: multiplied, count 2
  EXPECT_EQ(got[2], 1.0f);                               // not in the window
  EXPECT_EQ(got[3], 0.0f);
  EXPECT_EQ(got[4], 3.0f);  // evicted
  // The probabilities are the softmax of those logits.
  double total = 0.0;
  for (const auto& [token, logit] : got) total += std::exp(double{logit});
  for (const TokenProb& t : *dist) {
    EXPECT_NEAR(t.prob, std::exp(double{t.logit}) / total, 1e-15);
  }
  sampler.reset();  // forgets the window
  dist = sampler.distribution(logits);
  ASSERT_TRUE(dist.ok());
  for (const TokenProb& t : *dist) EXPECT_EQ(t.logit, logits[static_cast<size_t>(t.token)]);
}

TEST(Sampler, PenaltyWindowZeroIsOff) {
  SamplingParams p = plain_params();
  p.repeat_penalty = 3.0f;
  p.penalty_last_n = 0;
  Sampler sampler = make_sampler(p, 3);
  sampler.accept(std::vector<int32_t>{0, 0, 1});
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f};
  Result<std::span<const TokenProb>> dist = sampler.distribution(logits);
  ASSERT_TRUE(dist.ok());
  for (const TokenProb& t : *dist) EXPECT_EQ(t.logit, logits[static_cast<size_t>(t.token)]);
}

TEST(Sampler, LogitBiasMinusInfinityBans) {
  SamplingParams p = plain_params(7);
  p.logit_bias = {{2, -kInf}};
  Sampler sampler = make_sampler(p, 4);
  const std::vector<float> logits = {0.0f, 0.0f, 10.0f, 0.0f};  // token 2 would win nearly always
  for (int i = 0; i < 2000; ++i) {
    Result<int32_t> token = sampler.sample(logits);
    ASSERT_TRUE(token.ok());
    EXPECT_NE(*token, 2);
  }
  p.temperature = 0.0f;
  Sampler greedy = make_sampler(p, 4);
  EXPECT_EQ(*greedy.sample(logits), 0);

  p.logit_bias = {{0, -kInf}, {1, -kInf}, {2, -kInf}, {3, -kInf}};
  for (float temperature : {0.0f, 1.0f}) {
    p.temperature = temperature;
    Sampler none_left = make_sampler(p, 4);
    Result<int32_t> token = none_left.sample(logits);
    ASSERT_FALSE(token.ok());
    EXPECT_EQ(token.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(token.status().where().field, "logit_bias");
  }
}

TEST(Sampler, NonFiniteLogitsAreErrors) {
  for (float temperature : {0.0f, 0.8f}) {
    SamplingParams p;
    p.temperature = temperature;
    p.seed = 3;
    Sampler sampler = make_sampler(p, 1000);  // several scan blocks and a tail
    std::vector<float> logits(1000, 0.5f);
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), kInf}) {
      for (size_t at : {size_t{0}, size_t{577}, size_t{999}}) {
        logits[at] = bad;
        Result<int32_t> token = sampler.sample(logits);
        ASSERT_FALSE(token.ok());
        EXPECT_EQ(token.status().code(), ErrorCode::kNumericFault);
        EXPECT_EQ(token.status().where().field, "logits");
        EXPECT_NE(token.status().message().find(std::to_string(at)), std::string::npos);
        logits[at] = 0.5f;
      }
    }
    logits[10] = -kInf;  // a ban, not a fault
    logits[20] = 1.0f;
    ASSERT_TRUE(sampler.sample(logits).ok());
    Result<int32_t> short_row = sampler.sample(std::span<const float>(logits).first(999));
    ASSERT_FALSE(short_row.ok());
    EXPECT_EQ(short_row.status().code(), ErrorCode::kInvalidArgument);
  }
}

TEST(Sampler, NonFiniteLogitOfPenalizedTokenIsAnError) {
  SamplingParams p = plain_params();
  p.repeat_penalty = 1.5f;
  Sampler sampler = make_sampler(p, 4);
  sampler.accept(2);
  std::vector<float> logits = {0.0f, 1.0f, std::numeric_limits<float>::quiet_NaN(), 0.0f};
  Result<int32_t> token = sampler.sample(logits);
  ASSERT_FALSE(token.ok());
  EXPECT_EQ(token.status().code(), ErrorCode::kNumericFault);
}

std::vector<int32_t> run_sequence(const SamplingParams& params, int n) {
  PortableRandom random(99);
  const std::vector<float> logits = random_logits(random, 1000);
  Sampler sampler = make_sampler(params, 1000);
  std::vector<int32_t> tokens;
  for (int i = 0; i < n; ++i) {
    Result<int32_t> token = sampler.sample(logits);
    EXPECT_TRUE(token.ok());
    tokens.push_back(*token);
    sampler.accept(*token);
  }
  return tokens;
}

TEST(Sampler, SameSeedSameSequenceDifferentSeedsDiffer) {
  SamplingParams p;  // the defaults: top-k 40, top-p 0.95, min-p 0.05, temperature 0.8
  p.temperature = 1.5f;
  p.min_p = 0.0f;
  p.seed = 42;
  const std::vector<int32_t> a = run_sequence(p, 64);
  EXPECT_EQ(run_sequence(p, 64), a);
  p.seed = 43;
  EXPECT_NE(run_sequence(p, 64), a);
}

TEST(Sampler, SequenceIsPinnedAcrossPlatforms) {
  // The same seed must give the same tokens on every machine and library version: this pins
  // the PRNG, the exp and the draw. Update only on a deliberate change of the algorithm.
  SamplingParams p;
  p.temperature = 1.5f;
  p.seed = 20240501;
  const std::vector<int32_t> pinned = {654, 978, 386, 791, 847, 63,  880, 731,
                                       261, 978, 376, 608, 714, 175, 261, 630};
  EXPECT_EQ(run_sequence(p, 16), pinned) << ::testing::PrintToString(run_sequence(p, 16));
}

TEST(Sampler, ResetRestartsTheRandomStream) {
  SamplingParams p = plain_params(5);
  Sampler sampler = make_sampler(p, 50);
  PortableRandom random(1);
  const std::vector<float> logits = random_logits(random, 50);
  std::vector<int32_t> first;
  std::vector<int32_t> second;
  for (int i = 0; i < 20; ++i) first.push_back(*sampler.sample(logits));
  sampler.reset();
  for (int i = 0; i < 20; ++i) second.push_back(*sampler.sample(logits));
  EXPECT_EQ(first, second);
}

TEST(Sampler, RandomSeedIsDrawnAndReported) {
  SamplingParams p = plain_params(SamplingParams::kRandomSeed);
  Sampler a = make_sampler(p, 1000);
  Sampler b = make_sampler(p, 1000);
  EXPECT_NE(a.seed(), SamplingParams::kRandomSeed);
  EXPECT_NE(a.seed(), b.seed());  // 2^-64 chance of a false failure
  // Replaying with the reported seed gives the same tokens.
  p.seed = a.seed();
  Sampler replay = make_sampler(p, 1000);
  PortableRandom random(3);
  const std::vector<float> logits = random_logits(random, 1000);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(*a.sample(logits), *replay.sample(logits));
}

// With temperature 1 and no filters, draws follow softmax(logits). Pearson's chi-square over
// 200000 draws from 8 tokens (7 degrees of freedom) must stay below 24.32, the 0.1% critical
// value; the seed is fixed, so the test is deterministic, and a biased draw (e.g. an off-by-one
// in the inverse CDF, or modulo bias) exceeds it by orders of magnitude. Each frequency must also
// be within 5 standard deviations of its probability.
TEST(Sampler, DrawsFollowSoftmax) {
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f, -1.0f, 0.5f, 3.0f, -3.0f, 1.5f};
  Sampler sampler = make_sampler(plain_params(2024), 8);
  constexpr int kDraws = 200000;
  std::vector<int> counts(8, 0);
  for (int i = 0; i < kDraws; ++i) ++counts[static_cast<size_t>(*sampler.sample(logits))];
  double total = 0.0;
  for (float x : logits) total += std::exp(double{x});
  double chi_square = 0.0;
  for (size_t i = 0; i < 8; ++i) {
    const double p = std::exp(double{logits[i]}) / total;
    const double expected = p * kDraws;
    chi_square += (counts[i] - expected) * (counts[i] - expected) / expected;
    const double sigma = std::sqrt(kDraws * p * (1 - p));
    EXPECT_NEAR(counts[i], expected, 5 * sigma) << "token " << i;
  }
  EXPECT_LT(chi_square, 24.32);
}

// Speculative decoding's rule keeps the distribution: whatever token is drafted (the likeliest,
// a middling one, an unlikely one, one top-k filters out), the verdict's token follows the
// sampler's own distribution (same chi-square bound and 5-sigma bands as above, 7 degrees of
// freedom; top-k 6 leaves a zero-probability token out of the sum), and the draft is accepted
// with its probability. A rule that accepted more often than p(draft), or resampled without
// removing the draft, puts extra mass on the draft and fails by far.
TEST(Sampler, DraftVerdictsKeepTheSamplersDistribution) {
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f, -1.0f, 0.5f, 3.0f, -3.0f, 1.5f};
  SamplingParams params = plain_params(7);
  params.top_k = 7;  // token 6 is filtered out: probability 0
  params.temperature = 0.8f;
  Sampler reference = make_sampler(params, 8);
  const std::vector<TokenProb> dist = [&] {
    auto d = reference.distribution(logits);
    EXPECT_TRUE(d.ok());
    return std::vector<TokenProb>(d->begin(), d->end());
  }();
  std::vector<double> p(8, 0.0);
  for (const TokenProb& t : dist) p[static_cast<size_t>(t.token)] = t.prob;
  ASSERT_EQ(p[6], 0.0);
  for (const int32_t draft : {5, 2, 3, 6}) {
    Sampler sampler = make_sampler(params, 8);
    constexpr int kDraws = 200000;
    std::vector<int> counts(8, 0);
    int accepted = 0;
    for (int i = 0; i < kDraws; ++i) {
      const Result<Sampler::DraftVerdict> v = sampler.sample_against_draft(logits, draft);
      ASSERT_TRUE(v.ok());
      ASSERT_EQ(v->accepted, v->token == draft);
      ++counts[static_cast<size_t>(v->token)];
      accepted += v->accepted ? 1 : 0;
    }
    EXPECT_EQ(counts[6], 0) << "a filtered-out token was drawn (draft " << draft << ")";
    double chi_square = 0.0;
    for (size_t t = 0; t < 8; ++t) {
      if (p[t] == 0.0) continue;
      const double expected = p[t] * kDraws;
      chi_square += (counts[t] - expected) * (counts[t] - expected) / expected;
      EXPECT_NEAR(counts[t], expected, 5 * std::sqrt(kDraws * p[t] * (1 - p[t])))
          << "token " << t << ", draft " << draft;
    }
    EXPECT_LT(chi_square, 24.32) << "draft " << draft;
    const double pd = p[static_cast<size_t>(draft)];
    EXPECT_NEAR(accepted, pd * kDraws, 5 * std::sqrt(kDraws * pd * (1 - pd)) + 1e-9)
        << "draft " << draft;
  }
}

TEST(Sampler, GreedyDraftVerdictAcceptsOnlyTheArgmax) {
  SamplingParams params;
  params.temperature = 0.0f;
  Sampler sampler = make_sampler(params, 4);
  const std::vector<float> logits = {0.5f, 2.0f, 2.0f, -1.0f};  // tie: the lower id wins
  for (int32_t draft = 0; draft < 4; ++draft) {
    const Result<Sampler::DraftVerdict> v = sampler.sample_against_draft(logits, draft);
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->token, 1);
    EXPECT_EQ(v->accepted, draft == 1);
  }
}

TEST(Sampler, CreateRejectsBadArguments) {
  SamplingParams p = plain_params();
  p.logit_bias = {{10, 1.0f}};
  Result<Sampler> out_of_vocab = Sampler::create(p, 10);
  ASSERT_FALSE(out_of_vocab.ok());
  EXPECT_EQ(out_of_vocab.status().where().field, "logit_bias");
  EXPECT_FALSE(Sampler::create(plain_params(), 0).ok());
}

}  // namespace
}  // namespace synapse
