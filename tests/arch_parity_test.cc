// SPDX-License-Identifier: Apache-2.0
// The newer architectures against the fixtures of reference/arch (its README: tiny random
// qwen3moe, gemma2, gemma3, phi3 and phi3-longrope models in F32, Q8_0 and Q4_K_M, llama.cpp's
// logits for every position and float64 exact logits):
// - F32 files within 1e-4 (max |delta|) of exact everywhere -- Gemma too, although llama.cpp is
//   ~1.5e-3 away (its GELU rounds its input through FP16; ours does not) -- and llama.cpp's
//   greedy continuation wherever exact's top-2 margin exceeds twice our error;
// - quantized files at least as close to exact as llama.cpp's logits (RMS ratio <= 1.02: both
//   quantize the activations to 8 bits per block the same way, so the distances agree to rounding
//   noise). For the mixture of experts the RMS is taken over the rows where our choice of experts
//   is the exact one's (the F32-activation run stands in for it): a row whose top-2 flips moves by
//   ~1, in llama.cpp as in ours (llama.cpp's own output moves that much with an F16 KV cache).
// - every file's package gives bit-identical logits.
// Prints a table; SYNAPSE_ARCH_PARITY_TABLE=path writes it there too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "format/package/package_writer.h"
#include "kernels/kernel_selection.h"
#include "runtime/engine.h"
#include "tests/support/logits_parity.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Json = nlohmann::json;
using testing::Distance;
using testing::ModelRun;

constexpr double kF32Tolerance = 1e-4;
constexpr double kRmsRatio = 1.02;

// Every file of reference/arch with exact logits.
std::vector<std::string> arch_cases(const std::string& dir) {
  std::vector<std::string> stems;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const std::string suffix = ".exact.f32";
    if (name.size() <= suffix.size() || name.substr(name.size() - suffix.size()) != suffix)
      continue;
    const std::string stem = name.substr(0, name.size() - suffix.size());
    stems.push_back(stem);
  }
  std::sort(stems.begin(), stems.end());
  return stems;
}

bool is_moe(const std::string& stem) { return stem.find("moe") != std::string::npos; }

// Rows whose logits moved by more than `jump` between two runs that differ only in activation
// rounding: there the choice of experts flipped (a flip moves logits by ~1, rounding by ~0.1).
std::vector<bool> rows_with_same_routing(const ModelRun& a, const ModelRun& b, double jump) {
  std::vector<bool> same(a.logits.size() / a.n_vocab, true);
  for (size_t r = 0; r < same.size(); ++r) {
    for (size_t i = r * a.n_vocab; i < (r + 1) * a.n_vocab; ++i) {
      if (std::abs(static_cast<double>(a.logits[i]) - static_cast<double>(b.logits[i])) > jump) {
        same[r] = false;
      }
    }
  }
  return same;
}

TEST(ArchParity, ReferenceLogitsTable) {
  SYN_REQUIRE_FIXTURE(dir, "reference/arch/exact_vs_llamacpp.json");
  const std::string root = std::filesystem::path(dir).parent_path().string();
  const std::vector<std::string> stems = arch_cases(root);
  ASSERT_EQ(stems.size(), 18u) << "six architectures (reference/arch/README.md) in three encodings";
  std::string table =
      "| file | RMS to exact (ours) | RMS to exact (llama.cpp) | ratio | max abs (ours) | max abs "
      "(llama.cpp) | rows judged | greedy = llama.cpp | RMS to llama.cpp | all rows: ours / "
      "llama.cpp |\n"
      "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const std::string& stem : stems) {
    SCOPED_TRACE(stem);
    const Json tokens = Json::parse(testing::read_file_text(root + "/" + stem + ".tokens.json"));
    const auto ids = tokens["input_ids"].get<std::vector<int32_t>>();
    const auto greedy_ref = tokens["greedy_ids"].get<std::vector<int32_t>>();
    const std::vector<float> exact = testing::read_f32(root + "/" + stem + ".exact.f32");
    const std::vector<float> reference = testing::read_f32(root + "/" + stem + ".logits.f32");
    const std::string model = root + "/" + stem + ".gguf";
    const ModelRun run = testing::run_model(model, ids, greedy_ref.size(), 1, selected_kernels(),
                                            DotPath::kQuantized);
    ASSERT_EQ(run.logits.size(), exact.size());
    const size_t v = run.n_vocab;
    std::vector<bool> rows(ids.size(), true);
    if (is_moe(stem) && stem.find("f32") == std::string::npos) {
      const ModelRun f32 = testing::run_model(model, ids, 0, 1, selected_kernels(), DotPath::kF32);
      rows = rows_with_same_routing(run, f32, 0.5);
    }
    const size_t judged = static_cast<size_t>(std::count(rows.begin(), rows.end(), true));
    const Distance ours = testing::distance_over_rows(run.logits, exact, v, rows);
    const Distance theirs = testing::distance_over_rows(reference, exact, v, rows);
    const Distance vs_ref = testing::distance(run.logits, reference);
    const Distance ours_all = testing::distance(run.logits, exact);
    const Distance theirs_all = testing::distance(reference, exact);
    const bool greedy_same = run.greedy == greedy_ref;
    if (stem.find("-f32") != std::string::npos) {
      EXPECT_LE(ours.max_abs, kF32Tolerance);
      EXPECT_TRUE(greedy_same) << "greedy continuation differs from llama.cpp's";
    } else {
      EXPECT_LE(ours.rms, theirs.rms * kRmsRatio);
      // A flip at one position also moves the later rows that attend to it: a handful of rows.
      EXPECT_GE(judged, ids.size() * 3 / 4) << "too many rows with flipped expert choices";
    }
    char line[512];
    std::snprintf(line, sizeof line,
                  "| %s | %.3g | %.3g | %.2f | %.3g | %.3g | %zu/%zu | %s | %.3g | %.3g / %.3g |\n",
                  stem.c_str(), ours.rms, theirs.rms, ours.rms / theirs.rms, ours.max_abs,
                  theirs.max_abs, judged, ids.size(), greedy_same ? "yes" : "no", vs_ref.rms,
                  ours_all.rms, theirs_all.rms);
    table += line;
  }
  std::printf("%s", table.c_str());
  if (const char* out = std::getenv("SYNAPSE_ARCH_PARITY_TABLE")) std::ofstream(out) << table;
}

TEST(ArchParity, PackagesGiveBitIdenticalLogits) {
  SYN_REQUIRE_FIXTURE(dir, "reference/arch/exact_vs_llamacpp.json");
  const std::string root = std::filesystem::path(dir).parent_path().string();
  testing::TempDir tmp;
  const std::vector<int32_t> ids = {1, 5, 9, 200, 17, 3, 44, 100};
  for (const std::string& stem : arch_cases(root)) {
    SCOPED_TRACE(stem);
    const std::string model = root + "/" + stem + ".gguf";
    const std::string package = tmp.file(stem + ".synapse");
    auto written = convert_to_package(model, package);
    ASSERT_TRUE(written.ok()) << written.status().to_string();
    const ModelRun a =
        testing::run_model(model, ids, 2, 1, selected_kernels(), DotPath::kQuantized);
    const ModelRun b =
        testing::run_model(package, ids, 2, 1, selected_kernels(), DotPath::kQuantized);
    ASSERT_FALSE(a.logits.empty());
    EXPECT_EQ(a.logits, b.logits);
  }
}

}  // namespace
}  // namespace synapse
