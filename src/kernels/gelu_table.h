// SPDX-License-Identifier: Apache-2.0
// GELU as llama.cpp evaluates it on the CPU (ggml's GGML_GELU_FP16): the input rounded to half
// precision, looked up in a table of half-precision results. It differs from the exact tanh form
// by up to ~1e-3 relative per activation; GeluForm::kTanhF16Table selects it for parity studies.
#pragma once

#include <cstddef>

namespace synapse {

// y[i] = table(half(x[i])); y may alias x.
void gelu_tanh_f16_table(const float* x, float* y, size_t n);

}  // namespace synapse
