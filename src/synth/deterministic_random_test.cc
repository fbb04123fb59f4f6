// SPDX-License-Identifier: Apache-2.0
#include "synth/deterministic_random.h"

#include <gtest/gtest.h>

#include <cmath>

namespace synapse {
namespace {

TEST(DeterministicRandom, SplitMix64ReferenceValues) {
  // SplitMix64 from state 0: the published first outputs of the reference implementation.
  DeterministicRandom random(0);
  EXPECT_EQ(random.next_u64(), 0xE220A8397B1DCDAFull);
  EXPECT_EQ(random.next_u64(), 0x6E789E6AA1B965F4ull);
  EXPECT_EQ(random.next_u64(), 0x06C45D188009454Full);
}

TEST(DeterministicRandom, StreamsDependOnSeedAndName) {
  auto first = [](uint64_t seed, std::string_view name) {
    return DeterministicRandom::for_stream(seed, name).next_u64();
  };
  EXPECT_EQ(first(42, "blk.0.attn_q.weight"), first(42, "blk.0.attn_q.weight"));
  EXPECT_NE(first(42, "blk.0.attn_q.weight"), first(43, "blk.0.attn_q.weight"));
  EXPECT_NE(first(42, "blk.0.attn_q.weight"), first(42, "blk.0.attn_k.weight"));
}

TEST(DeterministicRandom, BellHasUnitVarianceAndBoundedTails) {
  DeterministicRandom random(7);
  constexpr int kSamples = 200000;
  double sum = 0, sum_sq = 0, max_abs = 0;
  for (int i = 0; i < kSamples; ++i) {
    const double x = random.next_bell();
    sum += x;
    sum_sq += x * x;
    max_abs = std::max(max_abs, std::fabs(x));
  }
  const double mean = sum / kSamples;
  const double variance = sum_sq / kSamples - mean * mean;
  // Standard error of the mean is 1/sqrt(n) ~ 0.0022; of the variance ~ sqrt(1.8/n) ~ 0.003.
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(variance, 1.0, 0.015);
  EXPECT_LE(max_abs, 2.0 * std::sqrt(3.0));
  const double unit = DeterministicRandom(1).next_unit();
  EXPECT_GE(unit, 0.0);
  EXPECT_LT(unit, 1.0);
}

}  // namespace
}  // namespace synapse
