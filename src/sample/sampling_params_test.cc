// SPDX-License-Identifier: Apache-2.0
#include "sample/sampling_params.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

namespace synapse {
namespace {

TEST(SamplingParams, DefaultsAreLlamaCppsAndValid) {
  const SamplingParams p;
  EXPECT_EQ(p.temperature, 0.8f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_EQ(p.top_p, 0.95f);
  EXPECT_EQ(p.min_p, 0.05f);
  EXPECT_EQ(p.repeat_penalty, 1.0f);
  EXPECT_EQ(p.frequency_penalty, 0.0f);
  EXPECT_EQ(p.presence_penalty, 0.0f);
  EXPECT_EQ(p.penalty_last_n, 64);
  EXPECT_EQ(p.seed, SamplingParams::kRandomSeed);
  EXPECT_TRUE(validate(p).ok());
}

TEST(SamplingParams, AcceptsBoundaryValues) {
  SamplingParams p;
  p.temperature = 0.0f;  // greedy
  p.top_k = -5;          // off
  p.top_p = 1.0f;
  p.min_p = 1.0f;
  p.penalty_last_n = -1;
  p.frequency_penalty = -2.0f;
  p.logit_bias = {{0, -std::numeric_limits<float>::infinity()}, {3, 100.0f}};
  EXPECT_TRUE(validate(p).ok());
  p.min_p = 0.0f;
  EXPECT_TRUE(validate(p).ok());
}

TEST(SamplingParams, OutOfRangeNamesTheField) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    const char* field;
    std::function<void(SamplingParams&)> set;
  };
  const std::vector<Case> cases = {
      {"temperature", [](SamplingParams& p) { p.temperature = -0.1f; }},
      {"temperature", [&](SamplingParams& p) { p.temperature = nan; }},
      {"temperature", [&](SamplingParams& p) { p.temperature = inf; }},
      {"top_p", [](SamplingParams& p) { p.top_p = 0.0f; }},
      {"top_p", [](SamplingParams& p) { p.top_p = 1.01f; }},
      {"top_p", [&](SamplingParams& p) { p.top_p = nan; }},
      {"min_p", [](SamplingParams& p) { p.min_p = -0.01f; }},
      {"min_p", [](SamplingParams& p) { p.min_p = 1.5f; }},
      {"repeat_penalty", [](SamplingParams& p) { p.repeat_penalty = 0.0f; }},
      {"repeat_penalty", [&](SamplingParams& p) { p.repeat_penalty = inf; }},
      {"frequency_penalty", [&](SamplingParams& p) { p.frequency_penalty = nan; }},
      {"presence_penalty", [&](SamplingParams& p) { p.presence_penalty = -inf; }},
      {"penalty_last_n", [](SamplingParams& p) { p.penalty_last_n = -2; }},
      {"logit_bias",
       [](SamplingParams& p) {
         p.logit_bias = {{-1, 1.0f}};
       }},
      {"logit_bias",
       [&](SamplingParams& p) {
         p.logit_bias = {{1, inf}};
       }},
      {"logit_bias",
       [&](SamplingParams& p) {
         p.logit_bias = {{1, nan}};
       }},
  };
  for (const Case& c : cases) {
    SamplingParams p;
    c.set(p);
    const Status status = validate(p);
    ASSERT_FALSE(status.ok()) << c.field;
    EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(status.where().field, c.field);
  }
}

}  // namespace
}  // namespace synapse
