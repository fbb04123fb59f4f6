// SPDX-License-Identifier: Apache-2.0
// The reference kernels against the mathematics they implement (the SIMD variants are checked
// against these in kernels_isa_test): RoPE angles, layouts and YaRN, softmax, norms, activations
// and attention on inputs whose answers are known in closed form.
#include "kernels/ref/ref_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace synapse {
namespace {

// Four-ulp-ish agreement for results computed in double and rounded once.
constexpr float kClose = 1e-6f;

RopeParams plain_rope(RopeMode layout, uint32_t n_dims) {
  return RopeParams{layout, n_dims, 10000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f, 4096, nullptr};
}

TEST(RefRope, PositionZeroIsIdentityAndPairsRotateByTheta) {
  const size_t dim = 8;
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> y = x;
  ref::rope(y.data(), 1, dim, 0, plain_rope(RopeMode::kAdjacent, dim));
  for (size_t i = 0; i < dim; ++i) EXPECT_FLOAT_EQ(y[i], x[i]);
  // Position 3, pair i rotates by 3 * 10000^(-2i/8).
  y = x;
  ref::rope(y.data(), 1, dim, 3, plain_rope(RopeMode::kAdjacent, dim));
  for (size_t i = 0; i < dim / 2; ++i) {
    const double theta = 3.0 * std::pow(10000.0, -2.0 * static_cast<double>(i) / dim);
    const double a = x[2 * i], b = x[2 * i + 1];
    EXPECT_NEAR(y[2 * i], a * std::cos(theta) - b * std::sin(theta), kClose * 10);
    EXPECT_NEAR(y[2 * i + 1], a * std::sin(theta) + b * std::cos(theta), kClose * 10);
  }
}

TEST(RefRope, NeoxPairsHalvesAndPassesTheRestThrough) {
  const size_t dim = 12;
  const uint32_t n_rot = 8;  // the last 4 dimensions are not rotated
  std::vector<float> x(dim);
  for (size_t i = 0; i < dim; ++i) x[i] = static_cast<float>(i) - 5.5f;
  // NeoX on x equals adjacent on x with the halves interleaved, de-interleaved again.
  std::vector<float> neox = x, adjacent(dim);
  for (size_t i = 0; i < n_rot / 2; ++i) {
    adjacent[2 * i] = x[i];
    adjacent[2 * i + 1] = x[i + n_rot / 2];
  }
  for (size_t i = n_rot; i < dim; ++i) adjacent[i] = x[i];
  ref::rope(neox.data(), 1, dim, 7, plain_rope(RopeMode::kNeox, n_rot));
  ref::rope(adjacent.data(), 1, dim, 7, plain_rope(RopeMode::kAdjacent, n_rot));
  for (size_t i = 0; i < n_rot / 2; ++i) {
    EXPECT_FLOAT_EQ(neox[i], adjacent[2 * i]);
    EXPECT_FLOAT_EQ(neox[i + n_rot / 2], adjacent[2 * i + 1]);
  }
  for (size_t i = n_rot; i < dim; ++i) EXPECT_EQ(neox[i], x[i]);
}

TEST(RefRope, LinearScalingAndYarn) {
  const size_t dim = 64;
  std::vector<float> ones(dim, 1.0f);
  // freq_scale 1/4 without YaRN: the angle of position 4p equals the unscaled angle of p.
  std::vector<float> scaled = ones, unscaled = ones;
  RopeParams p = plain_rope(RopeMode::kNeox, dim);
  p.freq_scale = 0.25f;
  ref::rope(scaled.data(), 1, dim, 40, p);
  ref::rope(unscaled.data(), 1, dim, 10, plain_rope(RopeMode::kNeox, dim));
  for (size_t i = 0; i < dim; ++i) EXPECT_NEAR(scaled[i], unscaled[i], kClose * 10);
  // YaRN (ext_factor 1): the fastest-rotating pairs extrapolate (unscaled angle), the slowest
  // interpolate (scaled angle), and the magnitude grows by 1 + 0.1 ln(1 / freq_scale).
  RopeParams yarn = p;
  yarn.ext_factor = 1.0f;
  std::vector<float> y = ones;
  ref::rope(y.data(), 1, dim, 1000, yarn);
  const double mscale = 1.0 + 0.1 * std::log(4.0);
  const double fast = 1000.0;  // pair 0: theta_extrap = pos
  EXPECT_NEAR(y[0], mscale * (std::cos(fast) - std::sin(fast)), 1e-5);
  const size_t slow = dim / 2 - 1;
  const double theta = 0.25 * 1000.0 * std::pow(10000.0, -2.0 * slow / dim);
  EXPECT_NEAR(y[slow], mscale * (std::cos(theta) - std::sin(theta)), 1e-5);
  // Without YaRN, rotations preserve each pair's length.
  std::vector<float> v = {3, 4, 5, 12, 8, 15, 7, 24};
  ref::rope(v.data(), 1, 8, 123456, plain_rope(RopeMode::kAdjacent, 8));
  EXPECT_NEAR(std::hypot(v[0], v[1]), 5.0f, 1e-5f);
  EXPECT_NEAR(std::hypot(v[6], v[7]), 25.0f, 1e-4f);
}

TEST(RefOps, SoftmaxMaskAndSoftcap) {
  std::vector<float> x = {1.0f, 2.0f, 3.0f, 4.0f};
  const float mask[] = {0.0f, -INFINITY, 0.0f, 0.0f};
  ref::softmax(x.data(), 4, SoftmaxParams{1.0f, 0.0f, mask});
  EXPECT_EQ(x[1], 0.0f);
  EXPECT_NEAR(x[0] + x[2] + x[3], 1.0f, kClose);
  EXPECT_NEAR(x[3] / x[2], std::exp(1.0f), 1e-5f);
  // A soft-cap of 1 squeezes every score into (-1, 1): ratios stay below e^2.
  std::vector<float> y = {-100.0f, 100.0f};
  ref::softmax(y.data(), 2, SoftmaxParams{1.0f, 1.0f, nullptr});
  EXPECT_NEAR(y[1] / y[0], std::exp(2.0f * std::tanh(100.0f)), 1e-4f);
  // Everything masked: zeros, not NaN.
  std::vector<float> z = {1.0f, 2.0f};
  const float all[] = {-INFINITY, -INFINITY};
  ref::softmax(z.data(), 2, SoftmaxParams{1.0f, 0.0f, all});
  EXPECT_EQ(z[0], 0.0f);
  EXPECT_EQ(z[1], 0.0f);
}

TEST(RefOps, NormsAndActivations) {
  std::vector<float> x = {1.0f, -2.0f, 3.0f, -4.0f}, y(4);
  ref::rms_norm(x.data(), nullptr, 4, 0.0f, y.data());
  double sum = 0.0;
  for (float v : y) sum += static_cast<double>(v) * static_cast<double>(v);
  EXPECT_NEAR(sum / 4.0, 1.0, 1e-6);
  ref::layer_norm(x.data(), nullptr, nullptr, 4, 0.0f, y.data());
  EXPECT_NEAR(y[0] + y[1] + y[2] + y[3], 0.0f, kClose);
  const float a[] = {0.0f, 20.0f, -20.0f};
  float s[3], g[3];
  ref::silu(a, s, 3);
  ref::gelu_tanh(a, g, 3);
  EXPECT_EQ(s[0], 0.0f);
  EXPECT_NEAR(s[1], 20.0f, 1e-6f);
  EXPECT_NEAR(s[2], -20.0f * std::exp(-20.0f), 1e-12f);
  EXPECT_EQ(g[0], 0.0f);
  EXPECT_NEAR(g[1], 20.0f, 1e-6f);
  EXPECT_LT(std::fabs(g[2]), 1e-30f);  // gelu(-20) ~ -20 * 2.8e-89 underflows to -0
  float e;
  const float half = 0.5f;
  ref::gelu_erf(&half, &e, 1);
  EXPECT_NEAR(e, 0.5f * 0.5f * (1.0f + std::erf(0.5f / std::sqrt(2.0f))), kClose);
}

TEST(RefAttention, OneKeyGivesItsValueAndEqualKeysAverage) {
  const size_t dim = 4;
  // Two pages of one token each; keys equal, values differ.
  const float k0[] = {1, 0, 0, 0}, k1[] = {1, 0, 0, 0};
  const float v0[] = {1, 2, 3, 4}, v1[] = {3, 2, 1, 0};
  const uint8_t* k_pages[] = {reinterpret_cast<const uint8_t*>(k0),
                              reinterpret_cast<const uint8_t*>(k1)};
  const uint8_t* v_pages[] = {reinterpret_cast<const uint8_t*>(v0),
                              reinterpret_cast<const uint8_t*>(v1)};
  const KvPages kv{k_pages, v_pages, 1, 2, TensorType::kF32};
  const AttentionParams p{1, 1, dim, 1.0f, 0.0f};
  const float q[] = {0.3f, 0.1f, -0.2f, 0.5f};
  float out[dim];
  ref::attend(q, 1, kv, 0, 1, p, out);
  for (size_t d = 0; d < dim; ++d) EXPECT_FLOAT_EQ(out[d], v0[d]);
  ref::attend(q, 1, kv, 0, 2, p, out);
  for (size_t d = 0; d < dim; ++d) EXPECT_NEAR(out[d], (v0[d] + v1[d]) / 2, kClose);
  // A window of one key leaves only the newest: its value, not the average.
  const AttentionParams windowed{1, 1, dim, 1.0f, 0.0f, 1};
  ref::attend(q, 1, kv, 0, 2, windowed, out);
  for (size_t d = 0; d < dim; ++d) EXPECT_FLOAT_EQ(out[d], v1[d]);
}

TEST(RefOps, SoftcapIsCapTimesTanh) {
  const float x[] = {0.0f, 1.0f, -30.0f, 300.0f};
  float y[4];
  ref::softcap(x, 3.0f, y, 4);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(y[i], 3.0f * std::tanh(x[i] / 3.0f), 1e-6f);
  EXPECT_LE(y[3], 3.0f);
}

}  // namespace
}  // namespace synapse
