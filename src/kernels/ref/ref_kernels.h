// SPDX-License-Identifier: Apache-2.0
// The scalar reference kernels: written for clarity, never optimized; every SIMD variant is
// tested against them. Internal to the kernels layer (callers use the KernelTable).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernel_table.h"

namespace synapse::ref {

// Per weight type: the quantized-activation dot and the F32-activation dot (see kernel_table.h).
DotTileFn dot_kernel(TensorType type);
DotTileFn dot_f32_kernel(TensorType type);
void dequantize(TensorType type, const uint8_t* w, float* y, size_t n);

// Same traversal as the dot kernels with every product and scale replaced by its absolute value:
// the magnitude sum_b |scales_b| * sum_i |q_i x_i| (+ |min terms|) that bounds the rounding error
// of any evaluation order (kernels/tolerance.h).
DotTileFn dot_magnitude_kernel(TensorType type);
DotTileFn dot_f32_magnitude_kernel(TensorType type);

void quantize_q8_0(const float* x, uint8_t* y, size_t n);
void quantize_q8_k(const float* x, uint8_t* y, size_t n);

void rms_norm(const float* x, const float* weight, size_t n, float eps, float* y);
void layer_norm(const float* x, const float* weight, const float* bias, size_t n, float eps,
                float* y);
void softmax(float* x, size_t n, const SoftmaxParams& params);
void rope(float* x, size_t n_heads, size_t head_dim, int64_t pos, const RopeParams& params);
void exp(const float* x, float* y, size_t n);
void silu(const float* x, float* y, size_t n);
void gelu_tanh(const float* x, float* y, size_t n);
void gelu_erf(const float* x, float* y, size_t n);
void swiglu(const float* gate, const float* up, float* y, size_t n);
void add(const float* a, const float* b, float* y, size_t n);
void mul(const float* a, const float* b, float* y, size_t n);
void scale(const float* x, float s, float* y, size_t n);
void softcap(const float* x, float cap, float* y, size_t n);
void attend(const float* q, size_t n_group, const KvPages& kv, size_t kv_head, size_t n_keys,
            const AttentionParams& params, float* out);
uint64_t read_bytes(const uint8_t* p, size_t n);

void fill_table(KernelTable& table);

}  // namespace synapse::ref
