// SPDX-License-Identifier: Apache-2.0
// Speculative decoding changes speed, never output: greedy tokens and the logits they were chosen
// from are bit-identical with any drafter (prompt lookup, a draft model, one that guesses wrong)
// at any draft length, up to the end of the context; sampled pairs of tokens keep the target's
// joint distribution (chi-square).
#include "speculative/speculative_decoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "backend/cpu_backend.h"
#include "kernels/kernel_selection.h"
#include "sample/sampler.h"
#include "speculative/draft_model.h"
#include "speculative/prompt_lookup.h"
#include "synth/synth_model.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

// Proposes a fixed sequence (a drafter that is often wrong, or a chosen pair to verify).
class FixedDrafter final : public Drafter {
 public:
  explicit FixedDrafter(std::vector<int32_t> tokens) : tokens_(std::move(tokens)) {}
  Status propose(std::span<const int32_t>, size_t max_tokens,
                 std::vector<int32_t>& draft) override {
    draft.assign(tokens_.begin(),
                 tokens_.begin() + static_cast<long>(std::min(max_tokens, tokens_.size())));
    return ok_status();
  }

 private:
  std::vector<int32_t> tokens_;
};

struct Generated {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> rows;  // the logits each token was chosen from
  SpeculativeStats stats;
};

// Plain decoding: one token per step.
Generated plain_greedy(DecoderModel& model, const std::vector<int32_t>& prompt, size_t n) {
  Engine engine(model);
  Session session(engine);
  Generated g;
  Result<std::span<const float>> logits = session.append(prompt);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_TRUE(logits.ok()) << logits.status().to_string();
    if (!logits.ok()) break;
    g.rows.emplace_back(logits->begin(), logits->end());
    g.tokens.push_back(greedy_token(*logits));
    if (i + 1 == n || session.n_tokens() == model.n_ctx()) break;
    const int32_t next[] = {g.tokens.back()};
    logits = session.append(next);
  }
  return g;
}

// The loop a caller runs: choose from each row against its draft until a choice differs.
Generated speculative(DecoderModel& model, Drafter* drafter, size_t draft_max,
                      const std::vector<int32_t>& prompt, size_t n, Sampler& sampler) {
  Engine engine(model);
  Session session(engine);
  SpeculativeDecoder decoder(session, drafter, draft_max);
  Generated g;
  std::vector<int32_t> context = prompt;
  Result<std::span<const float>> first = session.append(prompt);
  EXPECT_TRUE(first.ok()) << first.status().to_string();
  if (!first.ok()) return g;
  g.rows.emplace_back(first->begin(), first->end());
  g.tokens.push_back(*sampler.sample(*first));
  context.push_back(g.tokens.back());
  while (g.tokens.size() < n && session.n_tokens() < model.n_ctx()) {
    const Status s = decoder.advance(context);
    EXPECT_TRUE(s.ok()) << s.to_string();
    if (!s.ok()) break;
    size_t accepted = 0;
    bool rejected = false;
    for (size_t i = 0; g.tokens.size() < n; ++i) {
      const std::span<const float> row = decoder.row(i);
      Sampler::DraftVerdict v{};
      if (i < decoder.drafts().size()) {
        v = *sampler.sample_against_draft(row, decoder.drafts()[i]);
      } else {
        v.token = *sampler.sample(row);
      }
      g.rows.emplace_back(row.begin(), row.end());
      g.tokens.push_back(v.token);
      context.push_back(v.token);
      if (!v.accepted) {
        rejected = i < decoder.drafts().size();
        break;
      }
      ++accepted;
    }
    decoder.settle(accepted, rejected);
  }
  g.stats = decoder.stats();
  return g;
}

Sampler greedy_sampler(int32_t n_vocab) {
  SamplingParams p;
  p.temperature = 0.0f;
  return std::move(Sampler::create(p, n_vocab)).value();
}

class SpeculativeDecoderTest : public ::testing::TestWithParam<TensorType> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    SynthOptions o;
    o.arch = "llama";
    o.n_embd = 64;
    o.n_head = 2;  // heads of 32: a block-quantized cache fits
    o.n_head_kv = 1;
    o.n_layer = 4;
    o.n_ctx = 96;
    o.type_attention = TensorType::kQ8_0;
    o.type_feed_forward = TensorType::kQ4_0;
    ASSERT_TRUE(synthesize_model(o, dir_->file("target.gguf")).ok());
    o.n_layer = 1;  // the same weights (streams keyed by seed and tensor name), a quarter the depth
    ASSERT_TRUE(synthesize_model(o, dir_->file("draft.gguf")).ok());
  }
  static void TearDownTestSuite() { delete dir_; }

  void SetUp() override {
    pool_ = std::make_unique<ThreadPool>(2);
    backend_ = std::make_unique<CpuBackend>(selected_kernels(), *pool_);
    DecoderOptions options;
    options.kv_type = GetParam();
    auto target = DecoderModel::open(dir_->file("target.gguf"), *backend_, options);
    ASSERT_TRUE(target.ok()) << target.status().to_string();
    target_ = std::move(*target);
    auto draft = DecoderModel::open(dir_->file("draft.gguf"), *backend_, options);
    ASSERT_TRUE(draft.ok()) << draft.status().to_string();
    draft_ = std::move(*draft);
  }

  static testing::TempDir* dir_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<CpuBackend> backend_;
  std::unique_ptr<DecoderModel> target_;
  std::unique_ptr<DecoderModel> draft_;
};

testing::TempDir* SpeculativeDecoderTest::dir_ = nullptr;

const std::vector<int32_t> kPrompt = {1, 17, 42, 99, 17, 42, 7, 250, 3};

TEST_P(SpeculativeDecoderTest, GreedyOutputIsBitIdenticalWhateverTheDrafter) {
  constexpr size_t kTokens = 60;
  const Generated plain = plain_greedy(*target_, kPrompt, kTokens);
  ASSERT_EQ(plain.tokens.size(), kTokens);
  PromptLookupDrafter lookup;
  DraftModelDrafter draft_model(*draft_);
  FixedDrafter wrong({5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18});
  const std::vector<std::pair<const char*, Drafter*>> drafters = {
      {"prompt lookup", &lookup}, {"draft model", &draft_model}, {"wrong guesses", &wrong}};
  for (const auto& [name, drafter] : drafters) {
    for (const size_t draft_max : {size_t{1}, size_t{4}, kMaxDraftTokens}) {
      SCOPED_TRACE(std::string(name) + ", draft_max " + std::to_string(draft_max));
      Sampler sampler = greedy_sampler(static_cast<int32_t>(target_->n_vocab()));
      const Generated spec = speculative(*target_, drafter, draft_max, kPrompt, kTokens, sampler);
      EXPECT_EQ(spec.tokens, plain.tokens);
      ASSERT_EQ(spec.rows.size(), plain.rows.size());
      for (size_t i = 0; i < spec.rows.size(); ++i) {
        ASSERT_EQ(spec.rows[i], plain.rows[i]) << "logits of token " << i;
      }
      EXPECT_GT(spec.stats.drafted, 0u);
      EXPECT_LE(spec.stats.accepted, spec.stats.drafted);
      if (drafter != &wrong) {
        // The multi-row verification is exercised: some drafts were right.
        EXPECT_GT(spec.stats.accepted, 0u);
        EXPECT_LT(spec.stats.steps, kTokens - 1);
      }
    }
  }
}

TEST_P(SpeculativeDecoderTest, DraftsStopAtTheEndOfTheContext) {
  const size_t room = target_->n_ctx() - kPrompt.size() + 1;  // the last token is never run
  const Generated plain = plain_greedy(*target_, kPrompt, room + 10);
  ASSERT_EQ(plain.tokens.size(), room);
  FixedDrafter drafter(std::vector<int32_t>(kMaxDraftTokens, 3));
  Sampler sampler = greedy_sampler(static_cast<int32_t>(target_->n_vocab()));
  const Generated spec =
      speculative(*target_, &drafter, kMaxDraftTokens, kPrompt, room + 10, sampler);
  EXPECT_EQ(spec.tokens, plain.tokens);
}

// Pairs (t1, t2) sampled at temperature 1 with top-k 3 follow p(t1) p(t2 | t1), computed from
// plain decoding, whether the drafter proposes the likeliest pair (often accepted) or a pair the
// model rarely picks. Pearson's chi-square over 9 cells (8 degrees of freedom) stays below 26.12,
// the 0.1% critical value; the seed is fixed, so the test is deterministic.
TEST_P(SpeculativeDecoderTest, SampledPairsKeepTheTargetsDistribution) {
  SamplingParams params;
  params.temperature = 1.0f;
  params.top_k = 3;
  params.top_p = 1.0f;
  params.min_p = 0.0f;
  params.seed = 11;
  const auto n_vocab = static_cast<int32_t>(target_->n_vocab());
  // The exact joint distribution from plain decoding.
  std::map<std::pair<int32_t, int32_t>, double> expected;
  int32_t likeliest_first = 0, likeliest_second = 0;
  {
    Engine engine(*target_);
    Session session(engine);
    Sampler sampler = std::move(Sampler::create(params, n_vocab)).value();
    auto first = session.append(kPrompt);
    ASSERT_TRUE(first.ok());
    const std::vector<float> first_row(first->begin(), first->end());
    const std::vector<TokenProb> p1 = [&] {
      auto d = sampler.distribution(first_row);
      return std::vector<TokenProb>(d->begin(), d->end());
    }();
    double best = -1.0;
    for (const TokenProb& a : p1) {
      session.truncate(kPrompt.size());
      const int32_t next[] = {a.token};
      auto second = session.append(next);
      ASSERT_TRUE(second.ok());
      auto p2 = sampler.distribution(*second);
      for (const TokenProb& b : *p2) {
        expected[{a.token, b.token}] = a.prob * b.prob;
        if (a.prob * b.prob > best) {
          best = a.prob * b.prob;
          likeliest_first = a.token;
          likeliest_second = b.token;
        }
      }
    }
  }
  ASSERT_EQ(expected.size(), 9u);
  for (const std::vector<int32_t>& pair :
       {std::vector<int32_t>{likeliest_first, likeliest_second}, std::vector<int32_t>{3, 4}}) {
    FixedDrafter drafter(pair);
    Sampler sampler = std::move(Sampler::create(params, n_vocab)).value();
    Engine engine(*target_);
    Session session(engine);
    const std::vector<int32_t> head(kPrompt.begin(), kPrompt.end() - 1);
    ASSERT_TRUE(session.append(head).ok());
    SpeculativeDecoder decoder(session, &drafter, 2);
    constexpr int kDraws = 6000;
    std::map<std::pair<int32_t, int32_t>, int> counts;
    for (int n = 0; n < kDraws; ++n) {
      session.truncate(head.size());
      ASSERT_TRUE(decoder.advance(kPrompt).ok());
      const Sampler::DraftVerdict v1 = *sampler.sample_against_draft(decoder.row(0), pair[0]);
      int32_t t2 = 0;
      if (v1.accepted) {
        t2 = sampler.sample_against_draft(decoder.row(1), pair[1])->token;
      } else {
        // The rejected drafts' rows are not the context's: a new step from the chosen token.
        decoder.settle(0, true);
        std::vector<int32_t> context = kPrompt;
        context.push_back(v1.token);
        FixedDrafter none({});
        SpeculativeDecoder plain(session, &none, 0);
        ASSERT_TRUE(plain.advance(context).ok());
        t2 = *sampler.sample(plain.row(0));
      }
      ++counts[{v1.token, t2}];
    }
    double chi_square = 0.0;
    for (const auto& [cell, p] : expected) {
      const double e = p * kDraws;
      const double c = counts.count(cell) ? counts[cell] : 0;
      chi_square += (c - e) * (c - e) / e;
    }
    int outside = 0;
    for (const auto& [cell, c] : counts) outside += expected.count(cell) ? 0 : c;
    EXPECT_EQ(outside, 0) << "a pair outside the top-k was drawn";
    EXPECT_LT(chi_square, 26.12) << "drafts " << pair[0] << " " << pair[1];
  }
}

INSTANTIATE_TEST_SUITE_P(CacheTypes, SpeculativeDecoderTest,
                         ::testing::Values(TensorType::kF32, TensorType::kQ8_0),
                         [](const auto& param_info) {
                           return std::string(tensor_type_name(param_info.param));
                         });

}  // namespace
}  // namespace synapse
