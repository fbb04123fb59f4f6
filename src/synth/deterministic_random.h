// SPDX-License-Identifier: Apache-2.0
// Random numbers that are identical on every machine, compiler and standard library: SplitMix64
// for bits and an Irwin-Hall sum of four uniforms for a bell-shaped variate.
// std::normal_distribution is implementation-defined and libm's transcendental functions may differ
// in the last bit, so neither is used; everything here is exact IEEE arithmetic.
#pragma once

#include <cstdint>
#include <string_view>

namespace synapse {

class DeterministicRandom {
 public:
  explicit DeterministicRandom(uint64_t seed) : state_(seed) {}
  // A stream per (seed, name): changing one tensor's type or shape never changes another's values.
  static DeterministicRandom for_stream(uint64_t seed, std::string_view name);

  uint64_t next_u64();
  // Uniform in [0, 1) with 53 random bits.
  double next_unit();
  // Mean 0, variance 1, bounded to +-2*sqrt(3) (Irwin-Hall n=4): bell-shaped without outliers.
  double next_bell();

 private:
  uint64_t state_;
};

}  // namespace synapse
