// SPDX-License-Identifier: Apache-2.0
#include "sample/logprobs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "sample/portable_random.h"

namespace synapse {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(Logprobs, NormalizedAndMatchLogSoftmax) {
  PortableRandom random(17);
  for (int c = 0; c < 50; ++c) {
    const size_t n = 1 + random.next_u64() % kMaxTopLogprobs;
    std::vector<float> logits(n);
    for (float& x : logits) x = static_cast<float>(random.next_unit() * 40.0 - 20.0);
    const auto token = static_cast<int32_t>(random.next_u64() % n);
    Result<Logprobs> lp = compute_logprobs(logits, token, static_cast<int32_t>(n));
    ASSERT_TRUE(lp.ok()) << lp.status().to_string();
    ASSERT_EQ(lp->top().size(), n);
    double mass = 0.0;
    for (const TokenLogprob& t : lp->top()) mass += std::exp(double{t.logprob});
    // n float roundings of values near 1 at most.
    EXPECT_NEAR(mass, 1.0,
                4.0 * static_cast<double>(n) * double{std::numeric_limits<float>::epsilon()});
    // Against a direct double computation.
    double sum = 0.0;
    for (float x : logits) sum += std::exp(double{x});
    const double want = double{logits[static_cast<size_t>(token)]} - std::log(sum);
    EXPECT_NEAR(lp->chosen.logprob, want, 1e-5);
    EXPECT_EQ(lp->chosen.token, token);
  }
}

TEST(Logprobs, TopIsSortedWithTiesToLowerIdAndSkipsBanned) {
  const std::vector<float> logits = {1.0f, 3.0f, -kInf, 3.0f, 2.0f, -kInf};
  Result<Logprobs> lp = compute_logprobs(logits, 4, 20);
  ASSERT_TRUE(lp.ok());
  ASSERT_EQ(lp->top().size(), 4u);  // the two -inf tokens are not listed
  EXPECT_EQ(lp->top()[0].token, 1);
  EXPECT_EQ(lp->top()[1].token, 3);
  EXPECT_EQ(lp->top()[2].token, 4);
  EXPECT_EQ(lp->top()[3].token, 0);
  EXPECT_EQ(lp->top()[0].logprob, lp->top()[1].logprob);
  EXPECT_EQ(lp->top()[2].logprob, lp->chosen.logprob);

  Result<Logprobs> two = compute_logprobs(logits, 0, 2);
  ASSERT_TRUE(two.ok());
  ASSERT_EQ(two->top().size(), 2u);
  EXPECT_EQ(two->top()[0].token, 1);
  EXPECT_EQ(two->top()[1].token, 3);

  Result<Logprobs> banned = compute_logprobs(logits, 2, 0);
  ASSERT_TRUE(banned.ok());
  EXPECT_TRUE(banned->top().empty());
  EXPECT_EQ(banned->chosen.logprob, -kInf);
}

TEST(Logprobs, LargeVocabularyTopMatchesFullSort) {
  PortableRandom random(5);
  std::vector<float> logits(151936);
  for (float& x : logits) x = static_cast<float>(random.next_unit() * 30.0 - 15.0);
  Result<Logprobs> lp = compute_logprobs(logits, 123, kMaxTopLogprobs);
  ASSERT_TRUE(lp.ok());
  std::vector<int32_t> ids(logits.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
  std::partial_sort(ids.begin(), ids.begin() + kMaxTopLogprobs, ids.end(),
                    [&](int32_t a, int32_t b) {
                      const float la = logits[static_cast<size_t>(a)];
                      const float lb = logits[static_cast<size_t>(b)];
                      return la > lb || (la == lb && a < b);
                    });
  ASSERT_EQ(lp->top().size(), static_cast<size_t>(kMaxTopLogprobs));
  for (size_t i = 0; i < lp->top().size(); ++i) EXPECT_EQ(lp->top()[i].token, ids[i]);
}

TEST(Logprobs, Errors) {
  const std::vector<float> logits = {0.0f, 1.0f};
  EXPECT_EQ(compute_logprobs(logits, 2, 0).status().where().field, "logprobs");
  EXPECT_EQ(compute_logprobs(logits, -1, 0).status().where().field, "logprobs");
  EXPECT_EQ(compute_logprobs(logits, 0, 21).status().where().field, "top_logprobs");
  EXPECT_EQ(compute_logprobs(logits, 0, -1).status().where().field, "top_logprobs");
  const std::vector<float> nan = {0.0f, std::numeric_limits<float>::quiet_NaN()};
  EXPECT_EQ(compute_logprobs(nan, 0, 1).status().code(), ErrorCode::kNumericFault);
  const std::vector<float> inf = {kInf, 0.0f};
  EXPECT_EQ(compute_logprobs(inf, 0, 1).status().code(), ErrorCode::kNumericFault);
  const std::vector<float> all_banned = {-kInf, -kInf};
  EXPECT_FALSE(compute_logprobs(all_banned, 0, 1).ok());
}

}  // namespace
}  // namespace synapse
