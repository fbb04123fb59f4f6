// SPDX-License-Identifier: Apache-2.0
// The float weight types as the AVX-512 float kernels read them (float_kernels.cc over rows as
// stored, dot_interleaved_float.cc over interleaved groups): sixteen elements widened to F32,
// optionally under a mask, or one element. Included only by translation units compiled with the
// AVX-512 flags.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "format/tensor_type.h"
#include "kernels/avx2/simd_avx2.h"

namespace synapse::avx512 {
namespace {  // NOLINT(cert-dcl59-cpp,google-build-namespaces): internal linkage on purpose

struct F32 {
  static constexpr TensorType kType = TensorType::kF32;
  static constexpr size_t kBytes = 4;
  static __m512 load16(const uint8_t* p) { return _mm512_loadu_ps(p); }
  static __m512 load16(const uint8_t* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
  static float load1(const uint8_t* p) {
    float v;
    std::memcpy(&v, p, sizeof(v));
    return v;
  }
};

struct F16 {
  static constexpr TensorType kType = TensorType::kF16;
  static constexpr size_t kBytes = 2;
  static __m512 load16(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static __m512 load16(const uint8_t* p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  }
  static float load1(const uint8_t* p) { return simd::f16_to_f32(simd::load_u16(p)); }
};

struct BF16 {
  static constexpr TensorType kType = TensorType::kBF16;
  static constexpr size_t kBytes = 2;
  static __m512 widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static __m512 load16(const uint8_t* p) {
    return widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static __m512 load16(const uint8_t* p, __mmask16 m) {
    return widen(_mm256_maskz_loadu_epi16(m, p));
  }
  static float load1(const uint8_t* p) {
    const uint32_t bits = static_cast<uint32_t>(simd::load_u16(p)) << 16;
    float v;
    std::memcpy(&v, &bits, sizeof(v));
    return v;
  }
};

}  // namespace
}  // namespace synapse::avx512
