// SPDX-License-Identifier: Apache-2.0
// The run layout the AVX2 interleaved kernels share (dot_interleaved.cc,
// dot_interleaved_nibbles.cc): a group of eight rows is runs of four blocks (the last run may be
// shorter), each run the levels of its blocks and then their scales. With a run a multiple of the
// cache line, a group is one sequential stream whose scales sit a few lines behind their levels.
// (Q8_0 kept all of a group's scales after all its levels at first: a second stream per group,
// whose first lines were misses; its decode of 896-element rows out of cache measured ~30% slower
// than the rows as stored.)
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

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

// Weights a later call will want -- the next pass of groups, while the columns of this pass run
// against rows already in cache -- prefetched a share per run of the calls of this pass, so that
// reading them overlaps the arithmetic (Q8_0's batched decode and prefill; the four- and five-bit
// types' AVX2 kernels measured level with it, bound by their arithmetic). Without it, batched
// decode read each pass in a burst at its first column block and computed from cache for the
// others: the memory stream idled most of the time (AVX-VNNI's Q8_0 batched decode of eight columns
// out of cache, 896 x 4864, took 218 us where the arithmetic alone takes 131; with it 153-160).
struct Ahead {
  const uint8_t* start = nullptr;
  size_t bytes = 0;

  // Part i of n nearly equal parts (the last ones shorter or empty).
  Ahead part(size_t i, size_t n) const {
    const size_t share = (bytes + n - 1) / n;
    Ahead p;
    if (i * share < bytes) {
      p.start = start + i * share;
      p.bytes = bytes - i * share < share ? bytes - i * share : share;
    }
    return p;
  }

  // The share of each of a call's n_runs runs (computed once per call: a division).
  size_t per_run(size_t n_runs) const { return (bytes + n_runs - 1) / n_runs; }

  // This call's share for run r, per_run(n_runs) bytes a run.
  void prefetch_run(size_t r, size_t per_run) const {
    for (size_t line = 0; line < per_run; line += 64) {
      const size_t at = r * per_run + line;
      if (at < bytes) _mm_prefetch(reinterpret_cast<const char*>(start + at), _MM_HINT_T0);
    }
  }
};

// The next pass of a batched product: groups [next, next + kPass) of n_groups, group_bytes each.
template <size_t kPass>
Ahead next_pass(const uint8_t* w, size_t next, size_t n_groups, size_t group_bytes) {
  const size_t groups = n_groups - next < kPass ? n_groups - next : kPass;
  return Ahead{w + next * group_bytes, next < n_groups ? groups * group_bytes : 0};
}

}  // namespace
}  // namespace synapse::avx2
