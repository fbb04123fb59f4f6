// SPDX-License-Identifier: Apache-2.0
// AVX2 dot products of the 32-element block types (IQ4_NL included) with Q8_0 activations, rows
// as stored: the kernels are legacy_blocks.h's.
#include "kernels/avx2/avx2_internal.h"
#include "kernels/avx2/legacy_blocks.h"

namespace synapse::avx2 {
namespace {

using namespace legacy;  // NOLINT(google-build-using-namespace): this file's kernels

template <typename W>
void set(KernelTable& table, TensorType type) {
  WeightKernels& k = table.weights[static_cast<uint32_t>(type)];
  k.dot = dot<StoredRows<W>>;
  k.matmul.tile = tile<StoredRows<W>>;
  k.matmul.rows_per_tile = kRowsPerTile;
  k.matmul.tile_scratch_bytes = tile_scratch_bytes<StoredRows<W>>;
  // The tile unpacks its rows once and runs the decode arithmetic on them (legacy_blocks.h).
  k.matmul.equals_dot = true;
}

}  // namespace

void fill_legacy_dots(KernelTable& table) {
  set<Q8_0>(table, TensorType::kQ8_0);
  set<Q4_0>(table, TensorType::kQ4_0);
  set<Q4_1>(table, TensorType::kQ4_1);
  set<Q5_0>(table, TensorType::kQ5_0);
  set<Q5_1>(table, TensorType::kQ5_1);
  set<IQ4_NL>(table, TensorType::kIQ4_NL);
}

}  // namespace synapse::avx2
