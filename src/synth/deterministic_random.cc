// SPDX-License-Identifier: Apache-2.0
#include "synth/deterministic_random.h"

#include <cmath>

#include "base/hash.h"

namespace synapse {

DeterministicRandom DeterministicRandom::for_stream(uint64_t seed, std::string_view name) {
  return DeterministicRandom(xxh3_64(as_bytes(name), seed));
}

uint64_t DeterministicRandom::next_u64() {
  // SplitMix64 (Steele, Lea, Flood 2014).
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double DeterministicRandom::next_unit() { return static_cast<double>(next_u64() >> 11) * 0x1p-53; }

double DeterministicRandom::next_bell() {
  // Sum of 4 uniforms has mean 2 and variance 4/12; sqrt is correctly rounded by IEEE 754.
  static const double kScale = std::sqrt(3.0);
  const double sum = next_unit() + next_unit() + next_unit() + next_unit();
  return (sum - 2.0) * kScale;
}

}  // namespace synapse
