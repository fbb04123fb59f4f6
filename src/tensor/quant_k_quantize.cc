// SPDX-License-Identifier: Apache-2.0
// Reference quantizers of the K-quants. They implement the same searches as llama.cpp's
// quantize_row_*_ref (no importance matrix) with the same float arithmetic in the same order,
// so they write the same bytes; tests/quant_fixture_test.cc checks that against files llama.cpp
// wrote. Clarity and reproducibility matter here, not speed: models are quantized once.
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "tensor/half.h"
#include "tensor/quant_k.h"

namespace synapse {
namespace {

constexpr int kQK = static_cast<int>(kSuperBlockElements);
// Below this magnitude a group counts as all zero (ggml's GROUP_MAX_EPS).
constexpr float kGroupMaxEps = 1e-15f;

void check_sizes(size_t n_values, size_t n_blocks) {
  SYN_CHECK(n_values == n_blocks * kSuperBlockElements,
            "row length does not match the super-block count");
}

int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

// The value of largest magnitude among n (the first one on ties), as ggml's searches pick it.
float signed_absmax(const float* x, int n) {
  float max = 0.0f, amax = 0.0f;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  return max;
}
float as_float(int v) { return static_cast<float>(v); }

// Symmetric quantization of n values to integers in [-nmax, nmax - 1] (stored with +nmax),
// weighted by x^2, trying 19 scales around nmax / max and keeping the one that maximizes the
// weighted correlation. Returns the scale. (ggml's make_qx_quants with rmse_type 1, no weights.)
float make_qx_quants(int n, int nmax, const float* x, int8_t* levels) {
  const float max = signed_absmax(x, n);
  if (std::fabs(max) < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) levels[i] = 0;
    return 0.0f;
  }
  float iscale = as_float(-nmax) / max;
  float sumlx = 0.0f, suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    levels[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * as_float(l);
    suml2 += w * as_float(l) * as_float(l);
  }
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(as_float(nmax) + 0.1f * as_float(is)) / max;
    sumlx = suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * as_float(l);
      suml2 += w * as_float(l) * as_float(l);
    }
    if (suml2 > 0.0f && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        levels[i] =
            static_cast<int8_t>(nmax + clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// Symmetric 3-bit quantization with iterative refinement of single levels (ggml's
// make_q3_quants with do_rmse). Levels are stored with +nmax.
float make_q3_quants(int n, int nmax, const float* x, int8_t* levels) {
  const float max = signed_absmax(x, n);
  if (std::fabs(max) < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) levels[i] = 0;
    return 0.0f;
  }
  const float iscale = as_float(-nmax) / max;
  float sumlx = 0.0f, suml2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    levels[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * as_float(l);
    suml2 += w * as_float(l) * as_float(l);
  }
  for (int attempt = 0; attempt < 5; ++attempt) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * as_float(levels[i]);
      if (slx > 0.0f) {
        float sl2 = suml2 - w * as_float(levels[i]) * as_float(levels[i]);
        const int new_l = clamp_int(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
        if (new_l != levels[i]) {
          slx += w * x[i] * as_float(new_l);
          sl2 += w * as_float(new_l) * as_float(new_l);
          if (sl2 > 0.0f && slx * slx * suml2 > sumlx * sumlx * sl2) {
            levels[i] = static_cast<int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (n_changed == 0) break;
  }
  for (int i = 0; i < n; ++i) levels[i] = static_cast<int8_t>(levels[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Asymmetric quantization x ~ scale * l - min_out, l in [0, nmax], searching nstep + 1 scales
// around nmax / (max - min) by weighted least squares (ggml's make_qkx2_quants). `min_out` is
// the non-negative offset; `aux` is scratch of n levels.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* levels,
                       float* min_out, uint8_t* aux, float rmin, float rdelta, int nstep,
                       bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0.0f) min = 0.0f;
  if (max == min) {
    for (int i = 0; i < n; ++i) levels[i] = 0;
    *min_out = -min;
    return 0.0f;
  }
  float iscale = as_float(nmax) / (max - min);
  float scale = 1.0f / iscale;
  float best_error = 0.0f;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    levels[i] = static_cast<uint8_t>(clamp_int(l, 0, nmax));
    float diff = scale * as_float(levels[i]) + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += weights[i] * diff;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * as_float(is) + as_float(nmax)) / (max - min);
    float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
      aux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      sum_l += w * as_float(l);
      sum_l2 += w * as_float(l) * as_float(l);
      sum_xl += w * as_float(l) * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det > 0.0f) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
      if (this_min > 0.0f) {
        this_min = 0.0f;
        this_scale = sum_xl / sum_l2;
      }
      float error = 0.0f;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * as_float(aux[i]) + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        error += weights[i] * diff;
      }
      if (error < best_error) {
        for (int i = 0; i < n; ++i) levels[i] = aux[i];
        best_error = error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *min_out = -min;
  return scale;
}

// Packs 2-bit levels as Q2_K and Q3_K store them (four 32-element groups per byte column).
void pack_2bit(const uint8_t* levels, uint8_t* qs) {
  for (int j = 0; j < kQK; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<uint8_t>(levels[j + l] | (levels[j + l + 32] << 2) |
                                           (levels[j + l + 64] << 4) | (levels[j + l + 96] << 6));
    }
  }
}

// Q4_K/Q5_K: six-bit scale and min of sub-block j into the 12-byte scales field.
void pack_k4_scale_min(int j, uint8_t ls, uint8_t lm, uint8_t scales[kKScaleBytes]) {
  if (j < 4) {
    scales[j] = ls;
    scales[j + 4] = lm;
  } else {
    scales[j + 4] = static_cast<uint8_t>((ls & 0x0F) | ((lm & 0x0F) << 4));
    scales[j - 4] = static_cast<uint8_t>(scales[j - 4] | ((ls >> 4) << 6));
    scales[j] = static_cast<uint8_t>(scales[j] | ((lm >> 4) << 6));
  }
}

// Shared by Q4_K and Q5_K: sub-block scales and mins by make_qkx2_quants, six-bit super-block
// encoding, then every element re-quantized against the encoded scales.
void quantize_k4_scales(const float* x, int nmax, float rmin, float rdelta, int nstep,
                        uint8_t scales_out[kKScaleBytes], uint16_t& d_out, uint16_t& dmin_out,
                        uint8_t* levels) {
  float scales[8], mins[8], weights[32];
  uint8_t aux[32];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    float sum_x2 = 0.0f;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32.0f);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, levels + 32 * j, &mins[j], aux,
                                 rmin, rdelta, nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  std::memset(scales_out, 0, kKScaleBytes);
  for (int j = 0; j < 8; ++j) {
    const auto ls = static_cast<uint8_t>(clamp_int(nearest_int(inv_scale * scales[j]), 0, 63));
    const auto lm = static_cast<uint8_t>(clamp_int(nearest_int(inv_min * mins[j]), 0, 63));
    pack_k4_scale_min(j, ls, lm, scales_out);
  }
  d_out = f32_to_f16(max_scale / 63.0f);
  dmin_out = f32_to_f16(max_min / 63.0f);
  for (int j = 0; j < 8; ++j) {
    int sc = 0, m = 0;
    k4_scale_min(scales_out, j, sc, m);
    const float d = f16_to_f32(d_out) * as_float(sc);
    if (d == 0.0f) continue;
    const float dm = f16_to_f32(dmin_out) * as_float(m);
    for (int i = 0; i < 32; ++i) {
      levels[32 * j + i] =
          static_cast<uint8_t>(clamp_int(nearest_int((x[32 * j + i] + dm) / d), 0, nmax));
    }
  }
}

}  // namespace

void quantize_row_q2_k(std::span<const float> x_row, std::span<BlockQ2_K> y) {
  check_sizes(x_row.size(), y.size());
  constexpr float kScaleLevels = 15.0f;
  for (size_t i = 0; i < y.size(); ++i) {
    const float* x = x_row.data() + i * kSuperBlockElements;
    BlockQ2_K& b = y[i];
    uint8_t levels[kQK], aux[16];
    float weights[16], mins[16], scales[16];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, levels + 16 * j, &mins[j], aux,
                                   -0.5f, 0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0.0f) {
      const float iscale = kScaleLevels / max_scale;
      for (int j = 0; j < 16; ++j) {
        b.scales[j] = static_cast<uint8_t>(clamp_int(nearest_int(iscale * scales[j]), 0, 15));
      }
      b.d = f32_to_f16(max_scale / kScaleLevels);
    } else {
      for (int j = 0; j < 16; ++j) b.scales[j] = 0;
      b.d = f32_to_f16(0.0f);
    }
    if (max_min > 0.0f) {
      const float iscale = kScaleLevels / max_min;
      for (int j = 0; j < 16; ++j) {
        const int l = clamp_int(nearest_int(iscale * mins[j]), 0, 15);
        b.scales[j] = static_cast<uint8_t>(b.scales[j] | (l << 4));
      }
      b.dmin = f32_to_f16(max_min / kScaleLevels);
    } else {
      b.dmin = f32_to_f16(0.0f);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = f16_to_f32(b.d) * as_float(b.scales[j] & 0x0F);
      if (d == 0.0f) continue;
      const float dm = f16_to_f32(b.dmin) * as_float(b.scales[j] >> 4);
      for (int l = 0; l < 16; ++l) {
        levels[16 * j + l] =
            static_cast<uint8_t>(clamp_int(nearest_int((x[16 * j + l] + dm) / d), 0, 3));
      }
    }
    pack_2bit(levels, b.qs);
  }
}

void quantize_row_q3_k(std::span<const float> x_row, std::span<BlockQ3_K> y) {
  check_sizes(x_row.size(), y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const float* x = x_row.data() + i * kSuperBlockElements;
    BlockQ3_K& b = y[i];
    int8_t levels[kQK];
    float scales[16];
    for (int j = 0; j < 16; ++j) scales[j] = make_q3_quants(16, 4, x + 16 * j, levels + 16 * j);
    const float max_scale = signed_absmax(scales, 16);
    std::memset(b.scales, 0, kKScaleBytes);
    if (max_scale != 0.0f) {
      const float iscale = -32.0f / max_scale;
      for (int j = 0; j < 16; ++j) {
        const int l = clamp_int(nearest_int(iscale * scales[j]), -32, 31) + 32;
        if (j < 8) {
          b.scales[j] = static_cast<uint8_t>(l & 0x0F);
        } else {
          b.scales[j - 8] = static_cast<uint8_t>(b.scales[j - 8] | ((l & 0x0F) << 4));
        }
        b.scales[j % 4 + 8] =
            static_cast<uint8_t>(b.scales[j % 4 + 8] | ((l >> 4) << (2 * (j / 4))));
      }
      b.d = f32_to_f16(1.0f / iscale);
    } else {
      b.d = f32_to_f16(0.0f);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = f16_to_f32(b.d) * as_float(q3_k_scale(b.scales, j));
      if (d == 0.0f) continue;
      for (int l = 0; l < 16; ++l) {
        levels[16 * j + l] =
            static_cast<int8_t>(clamp_int(nearest_int(x[16 * j + l] / d), -4, 3) + 4);
      }
    }
    // The third bit of element e goes to bit e / 32 of hmask[e % 32].
    std::memset(b.hmask, 0, sizeof(b.hmask));
    uint8_t low[kQK];
    for (int e = 0; e < kQK; ++e) {
      int level = levels[e];
      if (level > 3) {
        b.hmask[e % 32] = static_cast<uint8_t>(b.hmask[e % 32] | (1 << (e / 32)));
        level -= 4;
      }
      low[e] = static_cast<uint8_t>(level);
    }
    pack_2bit(low, b.qs);
  }
}

void quantize_row_q4_k(std::span<const float> x_row, std::span<BlockQ4_K> y) {
  check_sizes(x_row.size(), y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const float* x = x_row.data() + i * kSuperBlockElements;
    BlockQ4_K& b = y[i];
    uint8_t levels[kQK];
    quantize_k4_scales(x, 15, -1.0f, 0.1f, 20, b.scales, b.d, b.dmin, levels);
    for (int j = 0; j < kQK; j += 64) {
      for (int l = 0; l < 32; ++l) {
        b.qs[j / 2 + l] = static_cast<uint8_t>(levels[j + l] | (levels[j + l + 32] << 4));
      }
    }
  }
}

void quantize_row_q5_k(std::span<const float> x_row, std::span<BlockQ5_K> y) {
  check_sizes(x_row.size(), y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const float* x = x_row.data() + i * kSuperBlockElements;
    BlockQ5_K& b = y[i];
    uint8_t levels[kQK];
    quantize_k4_scales(x, 31, -0.5f, 0.1f, 15, b.scales, b.d, b.dmin, levels);
    std::memset(b.qh, 0, sizeof(b.qh));
    for (int j = 0; j < kQK; j += 64) {
      const int bit = j / 32;  // sub-block index of the low-nibble half
      for (int l = 0; l < 32; ++l) {
        int l1 = levels[j + l], l2 = levels[j + l + 32];
        if (l1 > 15) {
          l1 -= 16;
          b.qh[l] = static_cast<uint8_t>(b.qh[l] | (1 << bit));
        }
        if (l2 > 15) {
          l2 -= 16;
          b.qh[l] = static_cast<uint8_t>(b.qh[l] | (2 << bit));
        }
        b.qs[j / 2 + l] = static_cast<uint8_t>(l1 | (l2 << 4));
      }
    }
  }
}

void quantize_row_q6_k(std::span<const float> x_row, std::span<BlockQ6_K> y) {
  check_sizes(x_row.size(), y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const float* x = x_row.data() + i * kSuperBlockElements;
    BlockQ6_K& b = y[i];
    int8_t levels[kQK];
    float scales[16];
    for (int j = 0; j < 16; ++j) scales[j] = make_qx_quants(16, 32, x + 16 * j, levels + 16 * j);
    const float max_scale = signed_absmax(scales, 16);
    if (std::fabs(max_scale) < kGroupMaxEps) {
      std::memset(&b, 0, sizeof(b));
      continue;
    }
    const float iscale = -128.0f / max_scale;
    b.d = f32_to_f16(1.0f / iscale);
    for (int j = 0; j < 16; ++j) {
      b.scales[j] = static_cast<int8_t>(clamp_int(nearest_int(iscale * scales[j]), -128, 127));
    }
    for (int j = 0; j < 16; ++j) {
      const float d = f16_to_f32(b.d) * as_float(b.scales[j]);
      if (d == 0.0f) continue;
      for (int l = 0; l < 16; ++l) {
        levels[16 * j + l] =
            static_cast<int8_t>(clamp_int(nearest_int(x[16 * j + l] / d), -32, 31) + 32);
      }
    }
    for (int h = 0; h < 2; ++h) {
      const int8_t* L = levels + 128 * h;
      uint8_t* ql = b.ql + 64 * h;
      uint8_t* qh = b.qh + 32 * h;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((L[l] & 0x0F) | ((L[l + 64] & 0x0F) << 4));
        ql[l + 32] = static_cast<uint8_t>((L[l + 32] & 0x0F) | ((L[l + 96] & 0x0F) << 4));
        qh[l] = static_cast<uint8_t>((L[l] >> 4) | ((L[l + 32] >> 4) << 2) |
                                     ((L[l + 64] >> 4) << 4) | ((L[l + 96] >> 4) << 6));
      }
    }
  }
}

void quantize_row_q8_k(std::span<const float> x_row, std::span<BlockQ8_K> y) {
  check_sizes(x_row.size(), y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    const float* x = x_row.data() + i * kSuperBlockElements;
    BlockQ8_K& b = y[i];
    const float max = signed_absmax(x, kQK);
    if (max == 0.0f) {
      std::memset(&b, 0, sizeof(b));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK; ++j) {
      b.qs[j] = static_cast<int8_t>(clamp_int(nearest_int(iscale * x[j]), -128, 127));
    }
    for (int s = 0; s < 16; ++s) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += b.qs[16 * s + l];
      b.bsums[s] = static_cast<int16_t>(sum);
    }
    b.d = 1.0f / iscale;
  }
}

}  // namespace synapse
