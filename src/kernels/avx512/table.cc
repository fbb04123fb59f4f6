// SPDX-License-Identifier: Apache-2.0
#include "kernels/avx512/avx512_kernels.h"

namespace synapse::avx512 {

void fill_table(KernelTable& table, bool vnni) {
  (void)table;
  (void)vnni;
}

}  // namespace synapse::avx512
