// SPDX-License-Identifier: Apache-2.0
#include "kernels/ref/ref_kernels.h"
#include "tensor/quant.h"

namespace synapse::ref {
namespace {

template <TensorType kType>
void dequantize_row_of(const uint8_t* w, float* y, size_t n) {
  dequantize(kType, w, y, n);
}

using DequantizeFn = void (*)(const uint8_t*, float*, size_t);

DequantizeFn dequantize_kernel(TensorType type) {
  using T = TensorType;
  switch (type) {
    case T::kF32:
      return dequantize_row_of<T::kF32>;
    case T::kF16:
      return dequantize_row_of<T::kF16>;
    case T::kBF16:
      return dequantize_row_of<T::kBF16>;
    case T::kQ8_0:
      return dequantize_row_of<T::kQ8_0>;
    case T::kQ4_0:
      return dequantize_row_of<T::kQ4_0>;
    case T::kQ4_1:
      return dequantize_row_of<T::kQ4_1>;
    case T::kQ5_0:
      return dequantize_row_of<T::kQ5_0>;
    case T::kQ5_1:
      return dequantize_row_of<T::kQ5_1>;
    case T::kQ2_K:
      return dequantize_row_of<T::kQ2_K>;
    case T::kQ3_K:
      return dequantize_row_of<T::kQ3_K>;
    case T::kQ4_K:
      return dequantize_row_of<T::kQ4_K>;
    case T::kQ5_K:
      return dequantize_row_of<T::kQ5_K>;
    case T::kQ6_K:
      return dequantize_row_of<T::kQ6_K>;
    case T::kIQ4_NL:
      return dequantize_row_of<T::kIQ4_NL>;
    case T::kIQ4_XS:
      return dequantize_row_of<T::kIQ4_XS>;
    default:
      return nullptr;
  }
}

}  // namespace

void fill_table(KernelTable& table) {
  table = KernelTable{};
  table.level = IsaLevel::kScalar;
  table.variant = "scalar";
  for (TensorType type : weight_types()) {
    WeightKernels& k = table.weights[static_cast<uint32_t>(type)];
    k.dot = dot_kernel(type);
    k.dot_f32 = dot_f32_kernel(type);
    k.dequantize = dequantize_kernel(type);
    k.matmul = MatmulKernel{};  // prefill uses `dot`
  }
  table.quantize_q8_0 = quantize_q8_0;
  table.quantize_q8_k = quantize_q8_k;
  table.rms_norm = rms_norm;
  table.layer_norm = layer_norm;
  table.softmax = softmax;
  table.rope = rope;
  table.exp = exp;
  table.silu = silu;
  table.gelu_tanh = gelu_tanh;
  table.gelu_erf = gelu_erf;
  table.swiglu = swiglu;
  table.add = add;
  table.mul = mul;
  table.scale = scale;
  table.softcap = softcap;
  table.attend = attend;
  table.read_bytes = read_bytes;
}

}  // namespace synapse::ref
