// SPDX-License-Identifier: Apache-2.0
// Reference dot products of quantized weight rows with quantized activations: Q8_0 activations
// for the 32-element block types, Q8_K for the K-quants. Within a block everything is exact
// integer arithmetic; blocks are combined in float, in block order. The kMagnitude instances
// sum absolute values instead (the scale of the rounding error, see kernels/tolerance.h).
//
// Integer ranges (why int32 is exact): a Q8_0 block sum is at most 32 * 128 * 128 = 2^19; a
// K-quant super-block sum of scale * sum(q * x) is at most 16 * 128 * (16 * 32 * 127) < 2^28;
// an IQ4_XS one 8 * 32 * (32 * 127 * 128) < 2^28.
#include <cstdlib>

#include "kernels/ref/ref_kernels.h"
#include "tensor/half.h"
#include "tensor/quant_iq4.h"
#include "tensor/quant_k.h"
#include "tensor/quant_legacy.h"

namespace synapse::ref {
namespace {

constexpr int kQK = static_cast<int>(kQuantBlockElements);
constexpr int kQKK = static_cast<int>(kSuperBlockElements);

template <bool kMagnitude>
int32_t term(int32_t v) {
  return kMagnitude ? std::abs(v) : v;
}
template <bool kMagnitude>
float term(float v) {
  return kMagnitude ? std::fabs(v) : v;
}

// --- 32-element blocks against Q8_0 -------------------------------------------------------

// sum(q_w * q_x) and sum(q_x) of one block, for integer weight values produced by `value(j)`.
template <bool kMagnitude, typename Value>
void block_sums(const BlockQ8_0& x, Value value, int32_t& sum_qx, int32_t& sum_x) {
  sum_qx = 0;
  sum_x = 0;
  for (int j = 0; j < kQK; ++j) {
    sum_qx += term<kMagnitude>(value(j) * x.qs[j]);
    sum_x += term<kMagnitude>(static_cast<int32_t>(x.qs[j]));
  }
}

// One weight type's blocks against Q8_0 activations: d * dx * sum(q * qx), plus
// m * dx * sum(qx) for the types with a min (x = d * q + m).
template <bool kMagnitude, typename Block, typename Value>
float dot_legacy(const uint8_t* w_row, const uint8_t* x_row, size_t k, Value value) {
  const auto* w = reinterpret_cast<const Block*>(w_row);
  const auto* x = reinterpret_cast<const BlockQ8_0*>(x_row);
  float acc = 0.0f;
  for (size_t b = 0; b < k / kQK; ++b) {
    int32_t sum_qx = 0, sum_x = 0;
    block_sums<kMagnitude>(
        x[b], [&](int j) { return value(w[b], j); }, sum_qx, sum_x);
    const float dx = f16_to_f32(x[b].d);
    float block = static_cast<float>(sum_qx) * term<kMagnitude>(f16_to_f32(w[b].d) * dx);
    if constexpr (requires { w[b].m; }) {
      block += static_cast<float>(sum_x) * term<kMagnitude>(f16_to_f32(w[b].m) * dx);
    }
    acc += block;
  }
  return acc;
}

template <bool kMagnitude>
float dot_q8_0(const uint8_t* w, const uint8_t* x, size_t k) {
  return dot_legacy<kMagnitude, BlockQ8_0>(
      w, x, k, [](const BlockQ8_0& b, int j) { return static_cast<int32_t>(b.qs[j]); });
}

template <bool kMagnitude>
float dot_q4_0(const uint8_t* w, const uint8_t* x, size_t k) {
  return dot_legacy<kMagnitude, BlockQ4_0>(
      w, x, k, [](const BlockQ4_0& b, int j) { return q4_value(b.qs, j) - 8; });
}

template <bool kMagnitude>
float dot_q4_1(const uint8_t* w, const uint8_t* x, size_t k) {
  return dot_legacy<kMagnitude, BlockQ4_1>(
      w, x, k, [](const BlockQ4_1& b, int j) { return q4_value(b.qs, j); });
}

template <bool kMagnitude>
float dot_q5_0(const uint8_t* w, const uint8_t* x, size_t k) {
  return dot_legacy<kMagnitude, BlockQ5_0>(
      w, x, k, [](const BlockQ5_0& b, int j) { return q5_value(b.qs, b.qh, j) - 16; });
}

template <bool kMagnitude>
float dot_q5_1(const uint8_t* w, const uint8_t* x, size_t k) {
  return dot_legacy<kMagnitude, BlockQ5_1>(
      w, x, k, [](const BlockQ5_1& b, int j) { return q5_value(b.qs, b.qh, j); });
}

template <bool kMagnitude>
float dot_iq4_nl(const uint8_t* w, const uint8_t* x, size_t k) {
  return dot_legacy<kMagnitude, BlockIQ4_NL>(
      w, x, k, [](const BlockIQ4_NL& b, int j) { return iq4_value(b.qs, j); });
}

// --- K-quants against Q8_K ------------------------------------------------------------------

// sum over 16-element (or 32-element) sub-blocks of scale(s) * sum(q * qx) and of
// min(s) * sum(qx), for a super-block whose element e has integer value value(e).
template <bool kMagnitude, typename Value, typename Scale, typename Min>
void super_block_sums(const BlockQ8_K& x, int sub_size, Value value, Scale scale, Min min,
                      int32_t& scaled, int32_t& mins) {
  scaled = 0;
  mins = 0;
  for (int s = 0; s < kQKK / sub_size; ++s) {
    int32_t sum_qx = 0, sum_x = 0;
    for (int l = 0; l < sub_size; ++l) {
      const int e = s * sub_size + l;
      sum_qx += term<kMagnitude>(value(e) * x.qs[e]);
      sum_x += term<kMagnitude>(static_cast<int32_t>(x.qs[e]));
    }
    scaled += term<kMagnitude>(scale(s)) * sum_qx;
    mins += term<kMagnitude>(min(s)) * sum_x;
  }
}

// d * dx * scaled - dmin * dx * mins, per super-block.
template <bool kMagnitude, typename Block, typename Value, typename Scale, typename Min>
float dot_k(const uint8_t* w_row, const uint8_t* x_row, size_t k, int sub_size, Value value,
            Scale scale, Min min) {
  const auto* w = reinterpret_cast<const Block*>(w_row);
  const auto* x = reinterpret_cast<const BlockQ8_K*>(x_row);
  float acc = 0.0f;
  for (size_t b = 0; b < k / kQKK; ++b) {
    int32_t scaled = 0, mins = 0;
    super_block_sums<kMagnitude>(
        x[b], sub_size, [&](int e) { return value(w[b], e); },
        [&](int s) { return scale(w[b], s); }, [&](int s) { return min(w[b], s); }, scaled, mins);
    const float dx = x[b].d;
    float dmin_x = 0.0f;
    if constexpr (requires { w[b].dmin; }) dmin_x = f16_to_f32(w[b].dmin) * dx;
    acc += term<kMagnitude>(f16_to_f32(w[b].d) * dx) * static_cast<float>(scaled);
    if (!kMagnitude) {
      acc -= dmin_x * static_cast<float>(mins);
    } else {
      acc += std::fabs(dmin_x) * static_cast<float>(mins);
    }
  }
  return acc;
}

int no_min(int /*s*/) { return 0; }

template <bool kMagnitude>
float dot_q2_k(const uint8_t* w, const uint8_t* x, size_t k) {
  return dot_k<kMagnitude, BlockQ2_K>(
      w, x, k, 16, [](const BlockQ2_K& b, int e) { return q2_k_value(b, e); },
      [](const BlockQ2_K& b, int s) { return b.scales[s] & 0x0F; },
      [](const BlockQ2_K& b, int s) { return b.scales[s] >> 4; });
}

template <bool kMagnitude>
float dot_q3_k(const uint8_t* w, const uint8_t* x, size_t k) {
  return dot_k<kMagnitude, BlockQ3_K>(
      w, x, k, 16, [](const BlockQ3_K& b, int e) { return q3_k_value(b, e); },
      [](const BlockQ3_K& b, int s) { return q3_k_scale(b.scales, s); },
      [](const BlockQ3_K& /*b*/, int s) { return no_min(s); });
}

// Q4_K and Q5_K: six-bit scale and min of sub-block s.
template <typename Block>
int k4_scale(const Block& b, int s) {
  int scale = 0, min = 0;
  k4_scale_min(b.scales, s, scale, min);
  return scale;
}
template <typename Block>
int k4_min(const Block& b, int s) {
  int scale = 0, min = 0;
  k4_scale_min(b.scales, s, scale, min);
  return min;
}

template <bool kMagnitude>
float dot_q4_k(const uint8_t* w, const uint8_t* x, size_t k) {
  return dot_k<kMagnitude, BlockQ4_K>(w, x, k, 32, q4_k_value, k4_scale<BlockQ4_K>,
                                      k4_min<BlockQ4_K>);
}

template <bool kMagnitude>
float dot_q5_k(const uint8_t* w, const uint8_t* x, size_t k) {
  return dot_k<kMagnitude, BlockQ5_K>(w, x, k, 32, q5_k_value, k4_scale<BlockQ5_K>,
                                      k4_min<BlockQ5_K>);
}

template <bool kMagnitude>
float dot_q6_k(const uint8_t* w, const uint8_t* x, size_t k) {
  return dot_k<kMagnitude, BlockQ6_K>(
      w, x, k, 16, [](const BlockQ6_K& b, int e) { return q6_k_value(b, e); },
      [](const BlockQ6_K& b, int s) { return static_cast<int>(b.scales[s]); },
      [](const BlockQ6_K& /*b*/, int s) { return no_min(s); });
}

// IQ4_XS: eight 32-element sub-blocks with signed scales and no min (a K-quant in all but the
// value table).
template <bool kMagnitude>
float dot_iq4_xs(const uint8_t* w, const uint8_t* x, size_t k) {
  return dot_k<kMagnitude, BlockIQ4_XS>(
      w, x, k, 32,
      [](const BlockIQ4_XS& b, int e) { return iq4_value(b.qs + 16 * (e / 32), e % 32); },
      iq4_xs_scale, [](const BlockIQ4_XS& /*b*/, int s) { return no_min(s); });
}

using RowDot = float (*)(const uint8_t* w, const uint8_t* x, size_t k);

template <RowDot kDot>
void tile(const DotTile& t) {
  for (size_t c = 0; c < t.n_cols; ++c) {
    for (size_t r = 0; r < t.n_rows; ++r) {
      t.y[c * t.y_stride + r] = kDot(t.w + r * t.w_stride, t.x + c * t.x_stride, t.k);
    }
  }
}

template <bool kMagnitude>
DotTileFn quant_dot_kernel(TensorType type) {
  switch (type) {
    case TensorType::kQ8_0:
      return tile<dot_q8_0<kMagnitude>>;
    case TensorType::kQ4_0:
      return tile<dot_q4_0<kMagnitude>>;
    case TensorType::kQ4_1:
      return tile<dot_q4_1<kMagnitude>>;
    case TensorType::kQ5_0:
      return tile<dot_q5_0<kMagnitude>>;
    case TensorType::kQ5_1:
      return tile<dot_q5_1<kMagnitude>>;
    case TensorType::kQ2_K:
      return tile<dot_q2_k<kMagnitude>>;
    case TensorType::kQ3_K:
      return tile<dot_q3_k<kMagnitude>>;
    case TensorType::kQ4_K:
      return tile<dot_q4_k<kMagnitude>>;
    case TensorType::kQ5_K:
      return tile<dot_q5_k<kMagnitude>>;
    case TensorType::kQ6_K:
      return tile<dot_q6_k<kMagnitude>>;
    case TensorType::kIQ4_NL:
      return tile<dot_iq4_nl<kMagnitude>>;
    case TensorType::kIQ4_XS:
      return tile<dot_iq4_xs<kMagnitude>>;
    default:
      return nullptr;
  }
}

}  // namespace

DotTileFn quant_dot_kernel_exact(TensorType type) { return quant_dot_kernel<false>(type); }
DotTileFn quant_dot_kernel_magnitude(TensorType type) { return quant_dot_kernel<true>(type); }

}  // namespace synapse::ref
