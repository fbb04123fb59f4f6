// SPDX-License-Identifier: Apache-2.0
#include "kernels/kernel_table.h"

#include <array>
#include <cctype>
#include <string>

#include "base/cpu_info.h"
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx512/avx512_kernels.h"
#include "kernels/ref/ref_kernels.h"

namespace synapse {
namespace {

constexpr std::array<std::string_view, kIsaLevelCount> kLevelNames = {"scalar", "avx2", "avx512"};

struct Tables {
  KernelTable levels[kIsaLevelCount];        // each level's best variant
  KernelTable without_vnni[kIsaLevelCount];  // the level without VNNI, where that differs
  bool available[kIsaLevelCount] = {};
  bool has_without_vnni[kIsaLevelCount] = {};
  const KernelTable* runnable[2 * kIsaLevelCount] = {};
  size_t n_runnable = 0;
};

// Built once: each level starts from the level below (without its VNNI variant: a CPU may have
// AVX512_VNNI and not AVX-VNNI, as Ice Lake and Zen 4 do) and overrides what it has.
const Tables& tables() {
  static const Tables instance = [] {
    Tables t{};
    const CpuFeatures features = CpuInfo::detect().features;
    ref::fill_table(t.levels[0]);
    t.levels[0].variant = "scalar";
    t.available[0] = true;
    t.runnable[t.n_runnable++] = &t.levels[0];
    // Level `l` from `base`: the variant without VNNI, then the one with it where the CPU has it.
    auto add_level = [&t](size_t l, const KernelTable& base, IsaLevel level, const char* name,
                          const char* vnni_name, bool vnni, auto fill) {
      KernelTable& plain = vnni ? t.without_vnni[l] : t.levels[l];
      plain = base;
      fill(plain, false);
      plain.level = level;
      plain.variant = name;
      t.available[l] = true;
      t.runnable[t.n_runnable++] = &plain;
      if (!vnni) return;
      t.has_without_vnni[l] = true;
      t.levels[l] = base;
      fill(t.levels[l], true);
      t.levels[l].level = level;
      t.levels[l].variant = vnni_name;
      t.runnable[t.n_runnable++] = &t.levels[l];
    };
    if (features.has_avx2_level()) {
      add_level(1, t.levels[0], IsaLevel::kAvx2, "avx2", "avx2+vnni", features.avx_vnni,
                [](KernelTable& table, bool vnni) { avx2::fill_table(table, vnni); });
    }
    if (features.has_avx512_level()) {
      const KernelTable& avx2 = t.has_without_vnni[1] ? t.without_vnni[1] : t.levels[1];
      add_level(2, avx2, IsaLevel::kAvx512, "avx512", "avx512+vnni", features.avx512vnni,
                [](KernelTable& table, bool vnni) { avx512::fill_table(table, vnni); });
    }
    return t;
  }();
  return instance;
}

}  // namespace

std::string_view isa_level_name(IsaLevel level) { return kLevelNames[static_cast<size_t>(level)]; }

std::optional<IsaLevel> isa_level_from_name(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (size_t i = 0; i < kIsaLevelCount; ++i) {
    if (kLevelNames[i] == lower) return static_cast<IsaLevel>(i);
  }
  return std::nullopt;
}

TensorType activation_type(TensorType weight_type) {
  switch (weight_type) {
    case TensorType::kQ8_0:
    case TensorType::kQ4_0:
    case TensorType::kQ4_1:
    case TensorType::kQ5_0:
    case TensorType::kQ5_1:
    case TensorType::kIQ4_NL:
      return TensorType::kQ8_0;
    case TensorType::kQ2_K:
    case TensorType::kQ3_K:
    case TensorType::kQ4_K:
    case TensorType::kQ5_K:
    case TensorType::kQ6_K:
    case TensorType::kIQ4_XS:
      return TensorType::kQ8_K;
    default:
      return TensorType::kF32;
  }
}

const KernelTable* kernel_table_for(IsaLevel level, bool vnni) {
  const Tables& t = tables();
  const auto i = static_cast<size_t>(level);
  if (!t.available[i]) return nullptr;
  return !vnni && t.has_without_vnni[i] ? &t.without_vnni[i] : &t.levels[i];
}

const KernelTable& reference_kernels() { return tables().levels[0]; }

std::span<const KernelTable* const> runnable_kernel_tables() {
  const Tables& t = tables();
  return {t.runnable, t.n_runnable};
}

}  // namespace synapse
