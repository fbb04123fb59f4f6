// SPDX-License-Identifier: Apache-2.0
// The parts of the AVX-512 table each AVX-512 translation unit fills. The *_vnni units are
// compiled with -mavx512vnni and filled only when the CPU has it.
#pragma once

#include "kernels/kernel_table.h"

namespace synapse::avx512 {

void fill_float_kernels(KernelTable& table);
void fill_interleaved_float_dots(KernelTable& table);
void fill_legacy_dots_vnni(KernelTable& table);
void fill_k_dots_vnni(KernelTable& table);
void fill_quant_matmul_vnni(KernelTable& table);
void fill_interleaved_dots_vnni(KernelTable& table);
void fill_interleaved_q4k_dots_vnni(KernelTable& table);
void fill_interleaved_q6k_dots_vnni(KernelTable& table);
void fill_interleaved_iq4xs_dots_vnni(KernelTable& table);

}  // namespace synapse::avx512
