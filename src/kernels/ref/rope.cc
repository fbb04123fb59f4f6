// SPDX-License-Identifier: Apache-2.0
// Reference rotary position embedding with ggml's parameterization (linear scaling through
// freq_scale, YaRN through ext_factor/beta_fast/beta_slow/attn_factor, optional frequency
// factors). Angles are computed in double: at position 32768 a float angle is already off by
// ~2e-3 rad, and the reference should be as exact as the output type allows. Every ISA uses this
// kernel: rotating a few hundred values per token does not pay for a SIMD variant.
#include <cmath>
#include <numbers>

#include "base/check.h"
#include "kernels/ref/ref_kernels.h"

namespace synapse::ref {
namespace {

constexpr size_t kMaxRopeDims = 1024;

// The dimension index at which the rotation reaches `n_rot` full turns over the original
// context (YaRN's correction range).
double yarn_corr_dim(double n_dims, double n_ctx_orig, double n_rot, double base) {
  return n_dims * std::log(n_ctx_orig / (n_rot * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
}

}  // namespace

void rope(float* x, size_t n_heads, size_t head_dim, int64_t pos, const RopeParams& p) {
  const size_t n_dims = p.n_dims;
  SYN_CHECK(n_dims % 2 == 0 && n_dims <= head_dim && n_dims <= kMaxRopeDims,
            "rope: n_dims must be even and at most head_dim");
  double corr_low = 0.0, corr_high = 0.0;
  if (p.ext_factor != 0.0f) {
    const auto dims = static_cast<double>(n_dims);
    const auto ctx = static_cast<double>(p.n_ctx_orig);
    const auto base = static_cast<double>(p.freq_base);
    const double start =
        std::floor(yarn_corr_dim(dims, ctx, static_cast<double>(p.beta_fast), base));
    const double end = std::ceil(yarn_corr_dim(dims, ctx, static_cast<double>(p.beta_slow), base));
    corr_low = start > 0.0 ? start : 0.0;
    corr_high = end < dims - 1.0 ? end : dims - 1.0;
  }
  float cos_theta[kMaxRopeDims / 2];
  float sin_theta[kMaxRopeDims / 2];
  for (size_t i = 0; i < n_dims / 2; ++i) {
    const double exponent = -2.0 * static_cast<double>(i) / static_cast<double>(n_dims);
    double theta_extrap =
        static_cast<double>(pos) * std::pow(static_cast<double>(p.freq_base), exponent);
    if (p.freq_factors != nullptr) theta_extrap /= static_cast<double>(p.freq_factors[i]);
    const double theta_interp = static_cast<double>(p.freq_scale) * theta_extrap;
    double theta = theta_interp;
    auto mscale = static_cast<double>(p.attn_factor);
    if (p.ext_factor != 0.0f) {
      const double y = (static_cast<double>(i) - corr_low) /
                       (corr_high - corr_low > 0.001 ? corr_high - corr_low : 0.001);
      const double ramp = 1.0 - (y < 0.0 ? 0.0 : (y > 1.0 ? 1.0 : y));
      const double mix = ramp * static_cast<double>(p.ext_factor);
      theta = theta_interp * (1.0 - mix) + theta_extrap * mix;
      mscale *= 1.0 + 0.1 * std::log(1.0 / static_cast<double>(p.freq_scale));
    }
    cos_theta[i] = static_cast<float>(std::cos(theta) * mscale);
    sin_theta[i] = static_cast<float>(std::sin(theta) * mscale);
  }
  for (size_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (size_t i = 0; i < n_dims / 2; ++i) {
      const size_t a = p.layout == RopeMode::kAdjacent ? 2 * i : i;
      const size_t b = p.layout == RopeMode::kAdjacent ? 2 * i + 1 : i + n_dims / 2;
      const float x0 = v[a], x1 = v[b];
      v[a] = x0 * cos_theta[i] - x1 * sin_theta[i];
      v[b] = x0 * sin_theta[i] + x1 * cos_theta[i];
    }
  }
}

}  // namespace synapse::ref
