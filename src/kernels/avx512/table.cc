// SPDX-License-Identifier: Apache-2.0
#include "kernels/avx512/avx512_internal.h"
#include "kernels/avx512/avx512_kernels.h"

namespace synapse::avx512 {

void fill_table(KernelTable& table, bool vnni) {
  fill_float_kernels(table);
  if (vnni) {
    fill_legacy_dots_vnni(table);
    fill_k_dots_vnni(table);
    fill_quant_matmul_vnni(table);
  }
}

}  // namespace synapse::avx512
