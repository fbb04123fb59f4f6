// SPDX-License-Identifier: Apache-2.0
#include "kernels/memory_bandwidth.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>

#include "base/check.h"

namespace synapse {
namespace {

constexpr size_t kPage = 4096;
constexpr size_t kSliceAlign = 256;  // read_bytes takes multiples of 256, 64-byte aligned

}  // namespace

BandwidthBuffer::BandwidthBuffer(size_t bytes) : size_((bytes + kPage - 1) / kPage * kPage) {
  void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  SYN_CHECK(p != MAP_FAILED, "BandwidthBuffer: mmap failed");
  data_ = static_cast<uint8_t*>(p);
  // Distinct values, so no page is shared with the zero page.
  for (size_t i = 0; i < size_; i += kPage)
    std::memset(data_ + i, static_cast<int>(i >> 12), kPage);
}

BandwidthBuffer::~BandwidthBuffer() { ::munmap(data_, size_); }

BandwidthSample measure_read_bandwidth(const KernelTable& kernels, const uint8_t* bytes,
                                       size_t size, ThreadPool& pool, int passes) {
  SYN_CHECK(reinterpret_cast<uintptr_t>(bytes) % 64 == 0, "bandwidth buffer must be 64-aligned");
  const auto threads = static_cast<size_t>(pool.size());
  const size_t slice = size / threads / kSliceAlign * kSliceAlign;
  std::vector<double> rates;
  std::atomic<uint64_t> sink{0};
  for (int pass = 0; pass < passes + 1; ++pass) {  // pass 0 warms up
    const auto start = std::chrono::steady_clock::now();
    pool.parallel_for(threads, [&](size_t task, int /*thread*/) {
      sink.fetch_add(kernels.read_bytes(bytes + task * slice, slice), std::memory_order_relaxed);
    });
    const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
    if (pass > 0) rates.push_back(static_cast<double>(slice * threads) / seconds.count() / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  BandwidthSample sample;
  sample.threads = static_cast<int>(threads);
  sample.best_gb_per_s = rates.back();
  sample.median_gb_per_s = rates[rates.size() / 2];
  return sample;
}

}  // namespace synapse
