// SPDX-License-Identifier: Apache-2.0
// Memory read bandwidth as the kernels see it: every thread of a pool streams its own contiguous
// slice of a buffer far larger than the caches through the table's read_bytes probe. This is
// the yardstick for the matrix-vector kernels (decode reads every weight byte once per token),
// measured in the same run as the kernels it judges (`synapse bench memory`, kernels_bench).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/kernel_table.h"

namespace synapse {

// A page-aligned buffer of `bytes` (rounded up to 4 KiB), written once so its pages exist.
class BandwidthBuffer {
 public:
  explicit BandwidthBuffer(size_t bytes);
  ~BandwidthBuffer();
  BandwidthBuffer(const BandwidthBuffer&) = delete;
  BandwidthBuffer& operator=(const BandwidthBuffer&) = delete;
  const uint8_t* data() const { return data_; }
  uint8_t* data() { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

struct BandwidthSample {
  int threads = 0;
  double best_gb_per_s = 0.0;    // 1e9 bytes per second, fastest pass
  double median_gb_per_s = 0.0;  // median pass
};

// Reads `bytes` (64-byte aligned) `passes` times on all threads of `pool`, each thread its own
// contiguous slice.
BandwidthSample measure_read_bandwidth(const KernelTable& kernels, const uint8_t* bytes,
                                       size_t size, ThreadPool& pool, int passes);
inline BandwidthSample measure_read_bandwidth(const KernelTable& kernels,
                                              const BandwidthBuffer& buffer, ThreadPool& pool,
                                              int passes) {
  return measure_read_bandwidth(kernels, buffer.data(), buffer.size(), pool, passes);
}

}  // namespace synapse
