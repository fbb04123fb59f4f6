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
  KernelTable levels[kIsaLevelCount];
  bool available[kIsaLevelCount] = {};
  KernelTable avx512_without_vnni;  // built for testing when the CPU has VNNI
  const KernelTable* runnable[kIsaLevelCount + 1] = {};
  size_t n_runnable = 0;
};

// Built once: each level starts from the level below and overrides what it has.
const Tables& tables() {
  static const Tables instance = [] {
    Tables t{};
    const CpuFeatures features = CpuInfo::detect().features;
    ref::fill_table(t.levels[0]);
    t.levels[0].variant = "scalar";
    t.available[0] = true;
    t.runnable[t.n_runnable++] = &t.levels[0];
    if (features.has_avx2_level()) {
      t.levels[1] = t.levels[0];
      avx2::fill_table(t.levels[1]);
      t.levels[1].level = IsaLevel::kAvx2;
      t.levels[1].variant = "avx2";
      t.available[1] = true;
      t.runnable[t.n_runnable++] = &t.levels[1];
    }
    if (features.has_avx512_level()) {
      t.levels[2] = t.levels[1];
      avx512::fill_table(t.levels[2], features.avx512vnni);
      t.levels[2].level = IsaLevel::kAvx512;
      t.levels[2].variant = features.avx512vnni ? "avx512+vnni" : "avx512";
      t.available[2] = true;
      if (features.avx512vnni) {
        t.avx512_without_vnni = t.levels[1];
        avx512::fill_table(t.avx512_without_vnni, false);
        t.avx512_without_vnni.level = IsaLevel::kAvx512;
        t.avx512_without_vnni.variant = "avx512";
        t.runnable[t.n_runnable++] = &t.avx512_without_vnni;
      }
      t.runnable[t.n_runnable++] = &t.levels[2];
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

const KernelTable* kernel_table_for(IsaLevel level) {
  const Tables& t = tables();
  const auto i = static_cast<size_t>(level);
  return t.available[i] ? &t.levels[i] : nullptr;
}

const KernelTable& reference_kernels() { return tables().levels[0]; }

std::span<const KernelTable* const> runnable_kernel_tables() {
  const Tables& t = tables();
  return {t.runnable, t.n_runnable};
}

}  // namespace synapse
