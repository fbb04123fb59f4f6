// SPDX-License-Identifier: Apache-2.0
// The run layout the AVX2 interleaved kernels share (dot_interleaved.cc,
// dot_interleaved_nibbles.cc): a group of eight rows is runs of four blocks (the last run may be
// shorter), each run the levels of its blocks and then their scales. With a run a multiple of the
// cache line, a group is one sequential stream whose scales sit a few lines behind their levels.
// (Q8_0 kept all of a group's scales after all its levels at first: a second stream per group,
// whose first lines were misses; its decode of 896-element rows out of cache measured ~30% slower
// than the rows as stored.)
#pragma once

#include <cstddef>

namespace synapse::avx2 {
namespace {  // NOLINT(cert-dcl59-cpp,google-build-namespaces): internal linkage on purpose

constexpr size_t kRunBlocks = 4;

// Where block b of a group of n_blocks blocks keeps its levels (kLevelBytes a block) and its
// scales (kScaleBytes a block).
template <size_t kLevelBytes, size_t kScaleBytes>
struct RunAt {
  static constexpr size_t kRunBytes = kRunBlocks * (kLevelBytes + kScaleBytes);
  size_t run;         // where the block's run starts
  size_t run_blocks;  // blocks in that run
  size_t levels;
  size_t scales;
  RunAt(size_t b, size_t n_blocks) : run(b / kRunBlocks * kRunBytes) {
    const size_t first = b / kRunBlocks * kRunBlocks;
    run_blocks = n_blocks - first < kRunBlocks ? n_blocks - first : kRunBlocks;
    levels = levels_of(b % kRunBlocks);
    scales = scales_of(b % kRunBlocks);
  }
  // Block `in_run` of this run: the kernels walk a run's blocks from its first block's RunAt
  // (no division per block).
  size_t levels_of(size_t in_run) const { return run + in_run * kLevelBytes; }
  size_t scales_of(size_t in_run) const {
    return run + run_blocks * kLevelBytes + in_run * kScaleBytes;
  }
};

}  // namespace
}  // namespace synapse::avx2
