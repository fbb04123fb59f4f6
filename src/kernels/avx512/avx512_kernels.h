// SPDX-License-Identifier: Apache-2.0
// Entry point of the AVX-512 (F/BW/VL/DQ) kernels, with VNNI variants of the integer dot
// products where the CPU has AVX512_VNNI. Call only when the CPU has the avx512 level.
#pragma once

#include "kernels/kernel_table.h"

namespace synapse::avx512 {

// Sets every entry that has an AVX-512 variant; leaves the others (the caller starts from the
// AVX2 table). `vnni`: the CPU has AVX512_VNNI.
void fill_table(KernelTable& table, bool vnni);

}  // namespace synapse::avx512
