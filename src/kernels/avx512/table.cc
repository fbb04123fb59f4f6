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
    // The VNNI dot products read the rows as stored (vpdpbusd does a slice's multiply-adds in
    // one op, so the AVX2 level's eight-row interleaving has nothing to save here): weights
    // this level's kernels read are not interleaved.
    for (WeightKernels& k : table.weights) {
      if (k.dot != nullptr && k.interleaved.rows != 0) k.interleaved = InterleavedKernels{};
    }
    // Except the sixteen-row groups of Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q4_K, Q6_K and
    // IQ4_XS: one kernel for every route, equal to the reference (dot_interleaved_vnni.cc,
    // dot_interleaved_q4k_vnni.cc, dot_interleaved_q6k_vnni.cc, dot_interleaved_iq4xs_vnni.cc).
    fill_interleaved_dots_vnni(table);
    fill_interleaved_q4k_dots_vnni(table);
    fill_interleaved_q6k_dots_vnni(table);
    fill_interleaved_iq4xs_dots_vnni(table);
  }
  // F32, F16 and BF16 in sixteen-row groups on every AVX-512 CPU: one kernel for every route,
  // each row one FMA chain in element order (dot_interleaved_float.cc).
  fill_interleaved_float_dots(table);
}

}  // namespace synapse::avx512
