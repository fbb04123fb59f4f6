// SPDX-License-Identifier: Apache-2.0
// The parts of the AVX2 table each AVX2 translation unit fills.
#pragma once

#include "kernels/kernel_table.h"

namespace synapse::avx2 {

void fill_legacy_dots(KernelTable& table);
void fill_interleaved_dots(KernelTable& table);
void fill_interleaved_dots_vnni(KernelTable& table);         // CPUs with avx_vnni only
void fill_interleaved_nibble_dots(KernelTable& table);       // after fill_float_dots
void fill_interleaved_nibble_dots_vnni(KernelTable& table);  // after it; CPUs with avx_vnni
void fill_k_dots(KernelTable& table);
void fill_float_dots(KernelTable& table);
void fill_quantizers(KernelTable& table);
void fill_ops(KernelTable& table);
void fill_attention(KernelTable& table);

}  // namespace synapse::avx2
