// SPDX-License-Identifier: Apache-2.0
#include "kernels/avx2/avx2_kernels.h"

namespace synapse::avx2 {

void fill_table(KernelTable& table) { (void)table; }

}  // namespace synapse::avx2
