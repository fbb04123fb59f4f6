// SPDX-License-Identifier: Apache-2.0
#include "sample/portable_random.h"

#include <bit>
#include <cmath>

namespace synapse {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

PortableRandom::PortableRandom(uint64_t seed) {
  // SplitMix64 never yields four zero words in a row, so the xoshiro state is never all zero.
  for (uint64_t& word : state_) word = splitmix64(seed);
}

uint64_t PortableRandom::next_u64() {
  const uint64_t result = std::rotl(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = std::rotl(state_[3], 45);
  return result;
}

double PortableRandom::next_unit() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double portable_exp(double x) {
  if (std::isnan(x)) return x;
  if (x >= 0.0) return 1.0;
  // Below this e^x is under half the smallest subnormal.
  if (x < -745.2) return 0.0;
  // x = n*ln2 + r with |r| <= ln2/2. ln2_hi has its low 32 bits zero, so n*ln2_hi is exact for
  // |n| < 2^21 and the subtraction loses nothing (Cody-Waite).
  constexpr double kInvLn2 = 1.4426950408889634074;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  const double n = std::floor(x * kInvLn2 + 0.5);
  const double r = (x - n * kLn2Hi) - n * kLn2Lo;
  // Taylor series to r^13/13!: the first omitted term is below 2^-56 relative for |r| <= 0.347.
  double p = 1.0 / 6227020800.0;  // 1/13!
  constexpr std::array<double, 13> kInvFactorial = {1.0 / 479001600.0,
                                                    1.0 / 39916800.0,
                                                    1.0 / 3628800.0,
                                                    1.0 / 362880.0,
                                                    1.0 / 40320.0,
                                                    1.0 / 5040.0,
                                                    1.0 / 720.0,
                                                    1.0 / 120.0,
                                                    1.0 / 24.0,
                                                    1.0 / 6.0,
                                                    1.0 / 2.0,
                                                    1.0,
                                                    1.0};
  for (double c : kInvFactorial) p = p * r + c;
  // p * 2^n, in two exact power-of-two steps so subnormal results come out right: n >= -1075.
  const auto k = static_cast<int64_t>(n);
  const int64_t k1 = k / 2;
  const int64_t k2 = k - k1;
  const auto pow2 = [](int64_t e) {
    return std::bit_cast<double>(static_cast<uint64_t>(e + 1023) << 52);
  };
  return p * pow2(k1) * pow2(k2);
}

}  // namespace synapse
