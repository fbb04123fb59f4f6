// SPDX-License-Identifier: Apache-2.0
// Reference quantizers and dequantizers of IQ4_NL and IQ4_XS. As in quant_legacy.cc the
// arithmetic follows ggml operation for operation (float, no fused multiply-add): the goal is
// llama-quantize's bytes, and a search over candidate scales amplifies any rounding difference
// into a different choice.
#include "tensor/quant_iq4.h"

#include <cmath>
#include <cstring>

#include "base/check.h"
#include "tensor/half.h"

namespace synapse {
namespace {

constexpr size_t kQK = kQuantBlockElements;
constexpr size_t kQKK = kSuperBlockElements;
constexpr size_t kSubBlocks = kQKK / kQK;
// A block whose largest magnitude is below this is stored as zeros (ggml's GROUP_MAX_EPS).
constexpr float kGroupMaxEps = 1e-15f;
// llama-quantize tries the scales max / (v0 + t) for t in -kTries..kTries besides max / -v0.
constexpr int kTries = 7;

// The index of the value nearest to x; a tie goes to the larger value, as in ggml.
int nearest_value_index(float x) {
  if (x <= static_cast<float>(kIq4Values[0])) return 0;
  if (x >= static_cast<float>(kIq4Values[15])) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < static_cast<float>(kIq4Values[mid])) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return x - static_cast<float>(kIq4Values[hi - 1]) < static_cast<float>(kIq4Values[hi]) - x
             ? hi - 1
             : hi;
}

// sum(w q x) and sum(w q^2) with q the values nearest to x * inverse_scale, weights w = x^2.
void weighted_sums(const float* x, const float* weight, float inverse_scale, float& sum_qx,
                   float& sum_q2) {
  sum_qx = 0.0f;
  sum_q2 = 0.0f;
  for (size_t j = 0; j < kQK; ++j) {
    const auto q = static_cast<float>(kIq4Values[nearest_value_index(inverse_scale * x[j])]);
    const float wq = weight[j] * q;
    sum_qx += wq * x[j];
    sum_q2 += wq * q;
  }
}

// The scale of one 32-element block minimizing sum(x^2 (x - d q)^2): the least-squares scale
// for the indices that d = max / 127 picks, then for those of 15 nearby trial scales, keeping
// the best. Zero for a block of (near) zeros.
float best_block_scale(const float* x) {
  float weight[kQK];
  float amax = 0.0f, max = 0.0f;
  for (size_t j = 0; j < kQK; ++j) {
    weight[j] = x[j] * x[j];
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  if (amax < kGroupMaxEps) return 0.0f;
  const float first = -max / static_cast<float>(kIq4Values[0]);
  float sum_qx = 0.0f, sum_q2 = 0.0f;
  weighted_sums(x, weight, 1.0f / first, sum_qx, sum_q2);
  float d = sum_q2 > 0.0f ? sum_qx / sum_q2 : 0.0f;
  float best = d * sum_qx;
  for (int t = -kTries; t <= kTries; ++t) {
    const float inverse = static_cast<float>(t + kIq4Values[0]) / max;
    weighted_sums(x, weight, inverse, sum_qx, sum_q2);
    if (sum_q2 > 0.0f && sum_qx * sum_qx > best * sum_q2) {
      d = sum_qx / sum_q2;
      best = d * sum_qx;
    }
  }
  return d;
}

// Indices of a block for the scale d (all "value 1" for d = 0, as ggml writes them), as nibbles.
void pack_indices(const float* x, float d, uint8_t qs[kQK / 2]) {
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (size_t j = 0; j < kQK / 2; ++j) {
    const int lo = nearest_value_index(id * x[j]);
    const int hi = nearest_value_index(id * x[j + kQK / 2]);
    qs[j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

}  // namespace

void quantize_row_iq4_nl(std::span<const float> x, std::span<BlockIQ4_NL> y) {
  SYN_CHECK(x.size() == y.size() * kQK, "row length does not match the block count");
  for (size_t b = 0; b < y.size(); ++b) {
    const float* xb = x.data() + b * kQK;
    const float d = best_block_scale(xb);
    y[b].d = f32_to_f16(d);
    pack_indices(xb, d, y[b].qs);
  }
}

void quantize_row_iq4_xs(std::span<const float> x, std::span<BlockIQ4_XS> y) {
  SYN_CHECK(x.size() == y.size() * kQKK, "row length does not match the block count");
  for (size_t b = 0; b < y.size(); ++b) {
    const float* xs = x.data() + b * kQKK;
    BlockIQ4_XS& out = y[b];
    float scales[kSubBlocks];
    float max_scale = 0.0f, amax_scale = 0.0f;
    for (size_t s = 0; s < kSubBlocks; ++s) {
      scales[s] = best_block_scale(xs + s * kQK);
      if (std::fabs(scales[s]) > amax_scale) {
        amax_scale = std::fabs(scales[s]);
        max_scale = scales[s];
      }
    }
    // The super-block scale maps the largest sub-block scale to -32; each sub-block keeps the
    // nearest multiple of it and re-picks its indices for that (ggml uses the unrounded d).
    const float d = -max_scale / 32.0f;
    out.d = f32_to_f16(d);
    out.scales_h = 0;
    std::memset(out.scales_l, 0, sizeof(out.scales_l));
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (size_t s = 0; s < kSubBlocks; ++s) {
      int l = nearest_int(id * scales[s]);
      l = l < -32 ? -32 : (l > 31 ? 31 : l);
      pack_indices(xs + s * kQK, d * static_cast<float>(l), out.qs + s * (kQK / 2));
      const auto stored = static_cast<uint32_t>(l + 32);
      out.scales_l[s / 2] |= static_cast<uint8_t>((stored & 0x0F) << (4 * (s % 2)));
      out.scales_h |= static_cast<uint16_t>((stored >> 4) << (2 * s));
    }
  }
}

void dequantize_row_iq4_nl(std::span<const BlockIQ4_NL> x, std::span<float> y) {
  SYN_CHECK(y.size() == x.size() * kQK, "row length does not match the block count");
  for (size_t b = 0; b < x.size(); ++b) {
    const float d = f16_to_f32(x[b].d);
    for (size_t j = 0; j < kQK; ++j) {
      y[b * kQK + j] = d * static_cast<float>(iq4_value(x[b].qs, static_cast<int>(j)));
    }
  }
}

void dequantize_row_iq4_xs(std::span<const BlockIQ4_XS> x, std::span<float> y) {
  SYN_CHECK(y.size() == x.size() * kQKK, "row length does not match the block count");
  for (size_t b = 0; b < x.size(); ++b) {
    const float d = f16_to_f32(x[b].d);
    for (size_t s = 0; s < kSubBlocks; ++s) {
      const float dl = d * static_cast<float>(iq4_xs_scale(x[b], static_cast<int>(s)));
      const uint8_t* qs = x[b].qs + s * (kQK / 2);
      for (size_t j = 0; j < kQK; ++j) {
        y[b * kQKK + s * kQK + j] = dl * static_cast<float>(iq4_value(qs, static_cast<int>(j)));
      }
    }
  }
}

}  // namespace synapse
