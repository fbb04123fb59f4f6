// SPDX-License-Identifier: Apache-2.0
#include "kernels/kernel_selection.h"

#include <gtest/gtest.h>

#include "base/cpu_info.h"
#include "tensor/quant.h"

namespace synapse {
namespace {

TEST(KernelSelection, PicksTheBestLevelAndPassesItsSelfCheck) {
  const KernelSelection s = select_kernels("");
  const CpuFeatures f = CpuInfo::detect().features;
  const IsaLevel expected = f.has_avx512_level() ? IsaLevel::kAvx512
                            : f.has_avx2_level() ? IsaLevel::kAvx2
                                                 : IsaLevel::kScalar;
  EXPECT_EQ(s.best, expected);
  EXPECT_EQ(s.table.level, expected);
  EXPECT_TRUE(s.errors.empty()) << s.errors.front().to_string();
  for (const KernelCheck& c : s.checks) EXPECT_TRUE(c.ok) << c.kernel << ": " << c.detail;
  if (expected != IsaLevel::kScalar) {
    EXPECT_FALSE(s.checks.empty());
  }
}

TEST(KernelSelection, OverrideForcesALevelOrIsExplained) {
  const KernelSelection scalar = select_kernels("scalar");
  EXPECT_EQ(scalar.table.level, IsaLevel::kScalar);
  EXPECT_TRUE(scalar.checks.empty());
  EXPECT_TRUE(scalar.override_note.empty());
  const KernelSelection bogus = select_kernels("sse9");
  EXPECT_NE(bogus.override_note.find("sse9"), std::string::npos);
  EXPECT_EQ(bogus.table.level, bogus.best);
  if (kernel_table_for(IsaLevel::kAvx2) != nullptr) {
    EXPECT_EQ(select_kernels("AVX2").table.level, IsaLevel::kAvx2);
  }
}

// A level's VNNI variant where the CPU has it, unless asked not to (SYNAPSE_VNNI=0): the
// kernels a CPU of that level without VNNI runs, e.g. AVX2 on Zen 3.
TEST(KernelSelection, VnniVariantWhereTheCpuHasItAndOffOnRequest) {
  const CpuFeatures f = CpuInfo::detect().features;
  if (f.has_avx2_level()) {
    const KernelSelection with = select_kernels("avx2");
    EXPECT_STREQ(with.table.variant, f.avx_vnni ? "avx2+vnni" : "avx2");
    const KernelSelection without = select_kernels("avx2", false);
    EXPECT_STREQ(without.table.variant, "avx2");
    EXPECT_TRUE(without.errors.empty());
  }
  if (f.has_avx512_level()) {
    EXPECT_STREQ(select_kernels("avx512").table.variant, f.avx512vnni ? "avx512+vnni" : "avx512");
    EXPECT_STREQ(select_kernels("avx512", false).table.variant, "avx512");
  }
}

// The reference Q4_0 dot, off by one in its first output.
void wrong_q4_0_dot(const DotTile& tile) {
  reference_kernels().weight(TensorType::kQ4_0).dot(tile);
  tile.y[0] += 1.0f;
}

// A variant that disagrees with the reference is disabled: its entry falls back to the level
// below and a kernel_mismatch error names it.
TEST(KernelSelection, SelfCheckDisablesAWrongKernel) {
  const KernelTable& reference = reference_kernels();
  KernelTable broken = reference;
  broken.level = IsaLevel::kAvx2;
  broken.variant = "broken";
  // Wrong on purpose: the Q4_0 dot is off by one, and add multiplies.
  broken.weights[static_cast<uint32_t>(TensorType::kQ4_0)].dot = wrong_q4_0_dot;
  broken.add = reference.mul;
  std::vector<KernelCheck> checks;
  std::vector<Status> errors;
  self_check(broken, reference, checks, errors);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].code(), ErrorCode::kKernelMismatch);
  EXPECT_EQ(errors[0].where().field, "dot.Q4_0");
  EXPECT_EQ(errors[1].where().field, "add");
  EXPECT_EQ(broken.weight(TensorType::kQ4_0).dot, reference.weight(TensorType::kQ4_0).dot);
  EXPECT_EQ(broken.add, reference.add);
  EXPECT_EQ(checks.size(), 2u);
}

TEST(KernelSelection, ProcessSelectionIsStable) {
  const KernelTable& a = selected_kernels();
  const KernelTable& b = selected_kernels();
  EXPECT_EQ(&a, &b);
  EXPECT_NE(a.weight(TensorType::kQ4_K).dot, nullptr);
}

TEST(KernelTable, NamesAndActivationTypes) {
  EXPECT_EQ(isa_level_name(IsaLevel::kAvx512), "avx512");
  EXPECT_EQ(isa_level_from_name("Scalar"), IsaLevel::kScalar);
  EXPECT_FALSE(isa_level_from_name("neon"));
  EXPECT_EQ(activation_type(TensorType::kQ4_1), TensorType::kQ8_0);
  EXPECT_EQ(activation_type(TensorType::kQ6_K), TensorType::kQ8_K);
  EXPECT_EQ(activation_type(TensorType::kBF16), TensorType::kF32);
  for (TensorType type : weight_types()) {
    const WeightKernels& k = reference_kernels().weight(type);
    EXPECT_NE(k.dot, nullptr);
    EXPECT_NE(k.dot_f32, nullptr);
    EXPECT_NE(k.dequantize, nullptr);
  }
  EXPECT_EQ(runnable_kernel_tables().front(), &reference_kernels());
}

}  // namespace
}  // namespace synapse
