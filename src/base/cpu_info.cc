// SPDX-License-Identifier: Apache-2.0
#include "base/cpu_info.h"

#include <cpuid.h>
#include <sched.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace synapse {
namespace {

struct CpuidRegs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegs cpuid(uint32_t leaf, uint32_t subleaf = 0) {
  CpuidRegs r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

bool bit(uint32_t reg, int index) { return ((reg >> index) & 1U) != 0; }

// XCR0 says which register states the OS saves on context switch; a feature the CPU has but the
// OS does not enable must not be used.
uint64_t read_xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t\n");
  if (first == std::string::npos) return {};
  const auto last = s.find_last_not_of(" \t\n");
  return s.substr(first, last - first + 1);
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return trim(line);
}

// Parses "48K", "2048K", "32M" as written in /sys/devices/system/cpu/cpu0/cache/index*/size.
size_t parse_cache_size(const std::string& text) {
  if (text.empty()) return 0;
  size_t value = 0;
  size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    value = value * 10 + static_cast<size_t>(text[i] - '0');
    ++i;
  }
  if (i < text.size() && text[i] == 'K') value *= 1024;
  if (i < text.size() && text[i] == 'M') value *= 1024 * 1024;
  return value;
}

void detect_caches(CpuInfo& info) {
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    const std::string level = read_first_line(dir + "/level");
    if (level.empty()) break;
    const std::string type = read_first_line(dir + "/type");
    const size_t size = parse_cache_size(read_first_line(dir + "/size"));
    if (level == "1" && type == "Data") info.l1d_cache_bytes = size;
    if (level == "2") info.l2_cache_bytes = size;
    if (level == "3") info.l3_cache_bytes = size;
  }
}

void detect_cores(CpuInfo& info) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    info.logical_cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    info.physical_cores = info.logical_cores;
    return;
  }
  info.logical_cores = CPU_COUNT(&set);
  // Hyper-threads of one core share a thread_siblings_list; count distinct lists.
  std::set<std::string> cores;
  for (size_t cpu = 0; cpu < static_cast<size_t>(CPU_SETSIZE); ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    const std::string siblings = read_first_line(
        "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/thread_siblings_list");
    cores.insert(siblings.empty() ? std::to_string(cpu) : siblings);
  }
  info.physical_cores = cores.empty() ? info.logical_cores : static_cast<int>(cores.size());
  if (info.logical_cores < 1) info.logical_cores = 1;
  if (info.physical_cores < 1) info.physical_cores = 1;
}

void detect_memory(CpuInfo& info) {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) {
    info.memory_total_bytes = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
  }
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream fields(line.substr(13));
      uint64_t kib = 0;
      fields >> kib;
      info.memory_available_bytes = kib * 1024;
    }
  }
}

}  // namespace

std::vector<std::string> CpuFeatures::names() const {
  std::vector<std::string> out;
  auto add = [&out](bool present, const char* name) {
    if (present) out.emplace_back(name);
  };
  add(sse42, "sse4.2");
  add(avx, "avx");
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx_vnni, "avx_vnni");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512dq, "avx512dq");
  add(avx512vnni, "avx512_vnni");
  add(avx512bf16, "avx512_bf16");
  return out;
}

CpuInfo CpuInfo::detect() {
  CpuInfo info;
  const CpuidRegs leaf0 = cpuid(0);
  const uint32_t max_leaf = leaf0.eax;
  char vendor[13] = {};
  std::memcpy(vendor + 0, &leaf0.ebx, 4);
  std::memcpy(vendor + 4, &leaf0.edx, 4);
  std::memcpy(vendor + 8, &leaf0.ecx, 4);
  info.vendor = vendor;

  if (cpuid(0x80000000).eax >= 0x80000004) {
    char brand[49] = {};
    for (uint32_t i = 0; i < 3; ++i) {
      const CpuidRegs r = cpuid(0x80000002 + i);
      std::memcpy(brand + 16 * i + 0, &r.eax, 4);
      std::memcpy(brand + 16 * i + 4, &r.ebx, 4);
      std::memcpy(brand + 16 * i + 8, &r.ecx, 4);
      std::memcpy(brand + 16 * i + 12, &r.edx, 4);
    }
    info.model = trim(brand);
  }

  CpuFeatures& f = info.features;
  if (max_leaf >= 1) {
    const CpuidRegs r1 = cpuid(1);
    const bool osxsave = bit(r1.ecx, 27);
    const uint64_t xcr0 = osxsave ? read_xcr0() : 0;
    const bool os_avx = (xcr0 & 0x6) == 0x6;       // XMM and YMM state
    const bool os_avx512 = (xcr0 & 0xE6) == 0xE6;  // plus opmask, ZMM_Hi256, Hi16_ZMM
    f.sse42 = bit(r1.ecx, 20);
    f.avx = os_avx && bit(r1.ecx, 28);
    f.fma = f.avx && bit(r1.ecx, 12);
    f.f16c = f.avx && bit(r1.ecx, 29);
    if (max_leaf >= 7) {
      const CpuidRegs r7 = cpuid(7, 0);
      f.avx2 = f.avx && bit(r7.ebx, 5);
      f.avx512f = os_avx512 && bit(r7.ebx, 16);
      f.avx512dq = f.avx512f && bit(r7.ebx, 17);
      f.avx512bw = f.avx512f && bit(r7.ebx, 30);
      f.avx512vl = f.avx512f && bit(r7.ebx, 31);
      f.avx512vnni = f.avx512f && bit(r7.ecx, 11);
      if (r7.eax >= 1) {  // sub-leaf 1 exists
        const CpuidRegs r71 = cpuid(7, 1);
        f.avx512bf16 = f.avx512f && bit(r71.eax, 5);
        f.avx_vnni = f.avx2 && bit(r71.eax, 4);
      }
    }
  }

  detect_cores(info);
  detect_caches(info);
  detect_memory(info);
  return info;
}

}  // namespace synapse
