// SPDX-License-Identifier: Apache-2.0
#include "sample/portable_random.h"

#include <array>
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

namespace {

// 2^(j/64) for j = 0..63, correctly rounded (computed with 60-digit decimal arithmetic).
constexpr std::array<double, 64> kExp2Table = {
    0x1.0000000000000p+0, 0x1.02c9a3e778061p+0, 0x1.059b0d3158574p+0, 0x1.0874518759bc8p+0,
    0x1.0b5586cf9890fp+0, 0x1.0e3ec32d3d1a2p+0, 0x1.11301d0125b51p+0, 0x1.1429aaea92de0p+0,
    0x1.172b83c7d517bp+0, 0x1.1a35beb6fcb75p+0, 0x1.1d4873168b9aap+0, 0x1.2063b88628cd6p+0,
    0x1.2387a6e756238p+0, 0x1.26b4565e27cddp+0, 0x1.29e9df51fdee1p+0, 0x1.2d285a6e4030bp+0,
    0x1.306fe0a31b715p+0, 0x1.33c08b26416ffp+0, 0x1.371a7373aa9cbp+0, 0x1.3a7db34e59ff7p+0,
    0x1.3dea64c123422p+0, 0x1.4160a21f72e2ap+0, 0x1.44e086061892dp+0, 0x1.486a2b5c13cd0p+0,
    0x1.4bfdad5362a27p+0, 0x1.4f9b2769d2ca7p+0, 0x1.5342b569d4f82p+0, 0x1.56f4736b527dap+0,
    0x1.5ab07dd485429p+0, 0x1.5e76f15ad2148p+0, 0x1.6247eb03a5585p+0, 0x1.6623882552225p+0,
    0x1.6a09e667f3bcdp+0, 0x1.6dfb23c651a2fp+0, 0x1.71f75e8ec5f74p+0, 0x1.75feb564267c9p+0,
    0x1.7a11473eb0187p+0, 0x1.7e2f336cf4e62p+0, 0x1.82589994cce13p+0, 0x1.868d99b4492edp+0,
    0x1.8ace5422aa0dbp+0, 0x1.8f1ae99157736p+0, 0x1.93737b0cdc5e5p+0, 0x1.97d829fde4e50p+0,
    0x1.9c49182a3f090p+0, 0x1.a0c667b5de565p+0, 0x1.a5503b23e255dp+0, 0x1.a9e6b5579fdbfp+0,
    0x1.ae89f995ad3adp+0, 0x1.b33a2b84f15fbp+0, 0x1.b7f76f2fb5e47p+0, 0x1.bcc1e904bc1d2p+0,
    0x1.c199bdd85529cp+0, 0x1.c67f12e57d14bp+0, 0x1.cb720dcef9069p+0, 0x1.d072d4a07897cp+0,
    0x1.d5818dcfba487p+0, 0x1.da9e603db3285p+0, 0x1.dfc97337b9b5fp+0, 0x1.e502ee78b3ff6p+0,
    0x1.ea4afa2a490dap+0, 0x1.efa1bee615a27p+0, 0x1.f50765b6e4540p+0, 0x1.fa7c1819e90d8p+0,
};

double pow2(int64_t e) { return std::bit_cast<double>(static_cast<uint64_t>(e + 1023) << 52); }

}  // namespace

double portable_exp(double x) {
  if (std::isnan(x)) return x;
  if (x >= 0.0) return 1.0;
  // Below this e^x is under half the smallest subnormal.
  if (x < -745.2) return 0.0;
  // x = (64k + j) * ln2/64 + r with |r| <= ln2/128. n = 64k + j is x * 64/ln2 rounded to nearest
  // by the add-and-subtract of 1.5 * 2^52 (exact IEEE, no libm floor). ln2/64 is split Cody-Waite
  // style: kLn2Hi has 32 significant bits, so n * kLn2Hi is exact for |n| < 2^21.
  constexpr double kInvLn2x64 = 0x1.71547652b82fep+6;
  constexpr double kLn2Hi = 0x1.62e42fee00000p-7;
  constexpr double kLn2Lo = 0x1.a39ef35793c76p-39;
  constexpr double kShift = 0x1.8p52;
  const double n = (x * kInvLn2x64 + kShift) - kShift;
  const double r = (x - n * kLn2Hi) - n * kLn2Lo;
  // e^r - 1 to r^5/5!: the first omitted term is below 2^-54 relative for |r| <= 0.0055.
  const double q = r + r * r * (1.0 / 2.0 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0))));
  const auto ni = static_cast<int64_t>(n);  // in [-68810, 0]
  const int64_t j = ni & 63;
  const int64_t k = (ni - j) / 64;  // floor(n / 64), >= -1076
  const double t = kExp2Table[static_cast<size_t>(j)];
  const double p = t + t * q;
  // p * 2^k, in two exact power-of-two steps so subnormal results are rounded once.
  const int64_t k1 = k / 2;
  return p * pow2(k1) * pow2(k - k1);
}

}  // namespace synapse
