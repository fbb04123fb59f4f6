// SPDX-License-Identifier: Apache-2.0
// What the machine can run: ISA features the CPU has and the OS enables, cores, caches, memory.
// Kernels pick their variants from this once at start-up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace synapse {

struct CpuFeatures {
  bool sse42 = false;
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool avx_vnni = false;

  // The level the kernels group these into.
  bool has_avx2_level() const { return avx2 && fma && f16c; }
  bool has_avx512_level() const { return has_avx2_level() && avx512f && avx512bw && avx512vl; }
  // Names of the features present, e.g. {"avx2", "fma", ...}.
  std::vector<std::string> names() const;
};

struct CpuInfo {
  std::string vendor;  // "GenuineIntel", "AuthenticAMD", ...
  std::string model;   // brand string, trimmed
  CpuFeatures features;
  int logical_cores = 1;       // usable by this process (affinity mask)
  int physical_cores = 1;      // distinct cores among them
  size_t l1d_cache_bytes = 0;  // 0 when unknown
  size_t l2_cache_bytes = 0;
  size_t l3_cache_bytes = 0;
  uint64_t memory_total_bytes = 0;
  uint64_t memory_available_bytes = 0;

  static CpuInfo detect();
};

}  // namespace synapse
