// SPDX-License-Identifier: Apache-2.0
#include "kernels/avx2/avx2_internal.h"
#include "kernels/avx2/avx2_kernels.h"

namespace synapse::avx2 {

void fill_table(KernelTable& table, bool vnni) {
  fill_legacy_dots(table);
  fill_interleaved_dots(table);
  fill_k_dots(table);
  fill_float_dots(table);
  fill_quantizers(table);
  fill_ops(table);
  fill_attention(table);
  // Last: it keeps the stored rows' dot_f32 (fill_float_dots) for its own F32 path.
  fill_interleaved_nibble_dots(table);
  // AVX-VNNI (vpdpbusd on 256-bit vectors, VEX-encoded): Q8_0's interleaved rows store their
  // levels plus 128 and take one vpdpbusd per slice (dot_interleaved_vnni.cc); Q4_0, Q4_1, Q5_0
  // and Q5_1 keep their layout, unsigned as stored, and take one per slice too
  // (dot_interleaved_nibbles_vnni.cc).
  if (vnni) {
    fill_interleaved_dots_vnni(table);
    fill_interleaved_nibble_dots_vnni(table);
  }
}

}  // namespace synapse::avx2
