// SPDX-License-Identifier: Apache-2.0
#include "base/cpu_info.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace synapse {
namespace {

// The flags line of /proc/cpuinfo is the kernel's view of the same CPUID bits.
std::string cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) return " " + line.substr(line.find(':') + 1) + " ";
  }
  return {};
}

bool has_flag(const std::string& flags, const std::string& flag) {
  return flags.find(" " + flag + " ") != std::string::npos;
}

TEST(CpuInfo, AgreesWithTheKernel) {
  const std::string flags = cpuinfo_flags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags line";
  const CpuFeatures f = CpuInfo::detect().features;
  EXPECT_EQ(f.avx2, has_flag(flags, "avx2"));
  EXPECT_EQ(f.fma, has_flag(flags, "fma"));
  EXPECT_EQ(f.f16c, has_flag(flags, "f16c"));
  EXPECT_EQ(f.avx512f, has_flag(flags, "avx512f"));
  EXPECT_EQ(f.avx512bw, has_flag(flags, "avx512bw"));
  EXPECT_EQ(f.avx512vl, has_flag(flags, "avx512vl"));
  EXPECT_EQ(f.avx512vnni, has_flag(flags, "avx512_vnni"));
  EXPECT_EQ(f.avx512bf16, has_flag(flags, "avx512_bf16"));
}

TEST(CpuInfo, SaneTopologyAndMemory) {
  const CpuInfo info = CpuInfo::detect();
  EXPECT_GE(info.logical_cores, 1);
  EXPECT_GE(info.physical_cores, 1);
  EXPECT_LE(info.physical_cores, info.logical_cores);
  EXPECT_GT(info.memory_total_bytes, 64ull << 20);
  EXPECT_LE(info.memory_available_bytes, info.memory_total_bytes);
  EXPECT_FALSE(info.vendor.empty());
  if (info.l1d_cache_bytes != 0) {
    EXPECT_LE(info.l1d_cache_bytes, info.l2_cache_bytes);
  }
  // The levels are nested: AVX-512 kernels also need the AVX2 level.
  if (info.features.has_avx512_level()) {
    EXPECT_TRUE(info.features.has_avx2_level());
  }
}

}  // namespace
}  // namespace synapse
