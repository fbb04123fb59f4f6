// SPDX-License-Identifier: Apache-2.0
// Random draws and exp() that give the same bits on every platform, compiler and library version,
// so a seeded request samples the same tokens everywhere. std::uniform_real_distribution and
// std::discrete_distribution are implementation-defined and libm's exp may differ in the last bit;
// neither is used. Everything here is plain IEEE double arithmetic (built with -ffp-contract=off).
#pragma once

#include <array>
#include <cstdint>

namespace synapse {

// xoshiro256** (Blackman and Vigna), its state filled from the seed by SplitMix64.
class PortableRandom {
 public:
  explicit PortableRandom(uint64_t seed);

  uint64_t next_u64();
  // Uniform in [0, 1): the top 53 bits of next_u64() scaled by 2^-53 (exact).
  double next_unit();

 private:
  std::array<uint64_t, 4> state_;
};

// e^x for x <= 0 (the only arguments sampling needs: logits minus their maximum), within a few
// ulps of the true value and bit-identical everywhere: reduction by ln2/64 (Cody-Waite), a table
// of 2^(j/64), a degree-5 polynomial, then scaling by 2^k through the exponent bits. Returns 0
// below -745 (and for -inf), NaN for NaN; positive x is clamped to 0 (returns 1) — callers never
// pass it.
double portable_exp(double x);

}  // namespace synapse
