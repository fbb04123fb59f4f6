// SPDX-License-Identifier: Apache-2.0
// Named tolerances for comparing a kernel with its reference, each derived from the arithmetic
// (Higham, "Accuracy and Stability of Numerical Algorithms", ch. 3). The self-check and the tests
// use the same functions, so a kernel the tests accept is a kernel the start-up check accepts.
#pragma once

#include <cstddef>

namespace synapse {

// Unit roundoff of IEEE binary32 (round to nearest): u = 2^-24.
inline constexpr double kFloatUnitRoundoff = 0x1p-24;

// gamma_n = n u / (1 - n u): a value that goes through n roundings in sequence is within a
// relative gamma_n of its exact value (Higham, Lemma 3.1).
constexpr double rounding_gamma(double n) {
  return n * kFloatUnitRoundoff / (1.0 - n * kFloatUnitRoundoff);
}

// A sum of terms evaluated in any order is within gamma_m * M of the exact sum, where m bounds the
// number of roundings any term goes through on its way into the result and M is the sum of the
// terms' magnitudes. Two evaluations (a SIMD kernel and the reference) are therefore within
// 2 gamma_m M of each other. M comes from the reference's "magnitude" kernels.
constexpr double sum_order_tolerance(double m, double magnitude) {
  return 2.0 * rounding_gamma(m) * magnitude;
}

// m for a quantized dot product of k elements: within a block or sub-block the integer sum is
// exact; each (sub-)block term then goes through at most 4 roundings (int to float, the weight
// and activation scale products, the min term), at most k / 16 sequential additions of
// sub-block partials, at most 16 more where a super-block's sub-blocks are summed before its
// scale is applied, and a 4-level tree reducing 16 vector lanes.
constexpr double quantized_dot_roundings(size_t k) { return static_cast<double>(k) / 16.0 + 24.0; }

// m for a dot product of k float products (F32/F16/BF16 weights, or any weights dequantized
// exactly against F32 activations): one product rounding plus at most k - 1 additions.
constexpr double float_dot_roundings(size_t k) { return static_cast<double>(k) + 1.0; }

// The SIMD exp used by the activation functions, softmax and attention: exp(x) = 2^n p(r) with
// |r| <= ln2/2 and p the degree-7 Taylor polynomial, whose truncation error r^8/8! is 5.3e-9
// (0.1 u); the range reduction and the 7 fused Horner steps add at most ~8 roundings. Checked
// over a dense sample of the float range in kernels_isa_test.
inline constexpr double kSimdExpRelError = 8.0 * kFloatUnitRoundoff;

// Results smaller than this are compared absolutely: subnormal floats (below 2^-126) carry
// fewer significant bits than the relative bounds assume, and the SIMD exp returns zero below
// exp(-104) ~ 7e-46.
inline constexpr double kTinyAbsTolerance = 0x1p-100;

// SiLU, SwiGLU and the tanh GELU (computed as x * sigmoid(2z), like the reference): the
// sigmoid's relative error is at most the exp's; the reference's libm exp (< 1 ulp) and the
// add, divide and multiply of both sides add at most 7 roundings between them.
inline constexpr double kActivationRelTolerance = kSimdExpRelError + 7.0 * kFloatUnitRoundoff;

// RMSNorm: both sides accumulate the squares in double, so the float scale 1/sqrt(mean + eps)
// differs by at most one rounding (1 ulp); the products x * scale * w add two roundings per side.
inline constexpr double kRmsNormRelTolerance = 6.0 * kFloatUnitRoundoff;

// Softmax of n values: each exponential differs by at most the SIMD exp error (plus the
// reference's < 1 ulp), the float sum of n terms by gamma_n (the reference sums in double), and
// the division by one rounding on each side.
constexpr double softmax_rel_tolerance(size_t n) {
  return 2.0 * kSimdExpRelError + rounding_gamma(static_cast<double>(n) + 4.0);
}

// Attention over n keys with head size d: the scores differ by at most
// delta = 2 gamma_{d+2} * scale * max_t sum_i |q_i k_ti| (dot product order) -- passed in as
// `score_error` -- which changes each softmax weight by a factor within exp(+-2 delta), i.e. by
// at most 4 delta relative for delta <= 1/2 (e^{2 delta} - 1 <= 4 delta there); the
// exponentials, the normalizing sum and the weighted sum of values add 2 exp errors and
// gamma_{n+4} per side. Since the weights sum to 1, the output error is that relative error
// times max_t |v_t|.
constexpr double attention_tolerance(size_t n_keys, double score_error, double max_abs_v) {
  return (4.0 * score_error + 2.0 * kSimdExpRelError +
          2.0 * rounding_gamma(static_cast<double>(n_keys) + 4.0)) *
         max_abs_v;
}

}  // namespace synapse
