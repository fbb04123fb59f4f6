// SPDX-License-Identifier: Apache-2.0
// Entry point of the AVX2+FMA+F16C kernels: fills a table. Call only when the CPU has the
// avx2 level (CpuFeatures::has_avx2_level()).
#pragma once

#include "kernels/kernel_table.h"

namespace synapse::avx2 {

// Sets every entry that has an AVX2 variant; leaves the others as they are (the caller starts
// from the reference table). `vnni`: the CPU has AVX-VNNI (CpuFeatures::avx_vnni), and the
// entries that have an AVX-VNNI variant take it.
void fill_table(KernelTable& table, bool vnni);

}  // namespace synapse::avx2
