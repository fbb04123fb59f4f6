// SPDX-License-Identifier: Apache-2.0
// Decoder parity against the fixtures (reference/logits/README in the fixtures' README.md):
// - stories260K greedy from BOS reproduces its author's text at 200 and 256 steps;
// - every reference model's logits (and those of the IQ4_NL/IQ4_XS encodings of tiny-llama, against
//   their F32 parent's exact logits) are judged against the exact float64 forward pass: F32
//   within 1e-4 everywhere with llama.cpp's greedy continuation; every other encoding with an
//   RMS distance to exact no larger than llama.cpp's and the argmax of exact wherever exact's
//   top-2 margin exceeds twice llama.cpp's largest error. Quantized weights are run both ways:
//   with quantized activations (the fast default; llama.cpp's scheme, so the distances match it
//   up to rounding noise measured per file, kNoiseSigmas) and with F32 activations (DotPath::kF32,
//   which must beat llama.cpp outright).
// - logits are bit-identical across 1/2/3 threads, greedy output identical across ISA levels.
// Prints a table (file, our RMS to exact, llama.cpp's, max abs, argmax agreement); with
// SYNAPSE_PARITY_TABLE=path it is also written there.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backend/cpu_backend.h"
#include "format/package/package_file.h"
#include "format/package/package_verify.h"
#include "format/package/package_writer.h"
#include "kernels/kernel_selection.h"
#include "runtime/engine.h"
#include "tests/support/logits_parity.h"
#include "tests/support/test_support.h"
#include "tokenizer/tokenizer.h"

namespace synapse {
namespace {

using Json = nlohmann::json;

// F32 weights: the README's bound.
constexpr double kF32Tolerance = 1e-4;
// Quantized activations: both engines quantize the activations to 8 bits per 32-element block
// the same way, so on most files our logits equal llama.cpp's to float rounding (RMS between
// them ~3e-7) and the ratio of the distances to exact is 1 to six digits. Two things make the
// rest differ, and neither favours one side:
// - an activation within float rounding (~1e-6 relative: the F32 ops differ in their last bits)
//   of a rounding boundary lands on the other integer; it moves one activation by one quantum,
//   towards exact or away with equal chance, and through the KV cache every later position;
// - the _1 formats' offset term: llama.cpp multiplies the min by s = fp16(d * sum q) (Q8_1
//   activations), we by fp16(d) * sum q (Q8_0 ones) -- one F16 rounding each, of the same size.
// So the excess of our squared distance over llama.cpp's is a sum of zero-mean differences,
// and its spread is measured from the file itself: per position p, t_p = sum over the vocabulary
// of (ours - exact)^2 - (llama - exact)^2, positions taken as independent samples, gives the
// standard error of the RMS ratio, sqrt(sum t_p^2) / (2 sum (llama - exact)^2). A file may
// exceed llama.cpp's distance by kNoiseSigmas standard errors, never by more than kRmsMarginCap:
// the bound is ~1e-6 where the logits agree and, on the two files where they do not, 2.0%
// (tiny-qwen2-q4_0: excess 0.66%, one standard error 0.67%) and 2.0% (tiny-qwen2-q5_1: excess
// 1.25%, one standard error 1.42%). A scheme that is less exact than llama.cpp's (an activation
// bit fewer, a truncating rounding) exceeds it by tens of standard errors on every file.
constexpr double kNoiseSigmas = 3.0;
constexpr double kRmsMarginCap = 0.02;
// The IQ4 cases judged against their parent's exact logits (see below): a fixed margin.
constexpr double kRmsMargin = 0.02;

// The standard error of RMS(ours - exact) / RMS(llama - exact) under the hypothesis that the two
// differ only by unbiased rounding (see above).
double ratio_standard_error(const std::vector<float>& ours, const std::vector<float>& theirs,
                            const std::vector<float>& exact, size_t n_vocab) {
  double sum_t2 = 0.0, theirs2 = 0.0;
  for (size_t p = 0; p * n_vocab < exact.size(); ++p) {
    double t = 0.0;
    for (size_t i = p * n_vocab; i < (p + 1) * n_vocab; ++i) {
      const double o = static_cast<double>(ours[i]) - static_cast<double>(exact[i]);
      const double l = static_cast<double>(theirs[i]) - static_cast<double>(exact[i]);
      t += o * o - l * l;
      theirs2 += l * l;
    }
    sum_t2 += t * t;
  }
  return theirs2 > 0.0 ? std::sqrt(sum_t2) / (2.0 * theirs2) : 0.0;
}

using testing::distance;
using testing::Distance;
using testing::ModelRun;
using testing::read_f32;
using testing::run_model;

struct Case {
  std::string name;   // file stem
  std::string model;  // path
  std::string dir;    // where <name>.tokens.json and <name>.logits.f32 are
  std::string exact;  // the float64 logits to judge against
};

// The IQ4 encodings of tiny-llama (reference/arch) have no exact logits of their own: they are
// judged against their F32 parent's, like llama.cpp's logits for them.
void add_iq4_cases(std::vector<Case>& cases) {
  const auto arch = testing::find_fixture("reference/arch");
  const auto parent_exact = testing::find_fixture("reference/logits/tiny-llama-f32.exact.f32");
  if (!arch || !parent_exact) return;
  for (const char* name : {"tiny-llama-iq4_nl", "tiny-llama-iq4_xs"}) {
    const std::string model = *arch + "/" + name + ".gguf";
    if (std::filesystem::exists(model)) cases.push_back({name, model, *arch, *parent_exact});
  }
}

std::vector<Case> reference_cases() {
  std::vector<Case> cases;
  const auto dir = testing::find_fixture("reference/logits");
  if (!dir) return cases;
  for (const auto& entry : std::filesystem::directory_iterator(*dir)) {
    const std::string name = entry.path().filename().string();
    const std::string suffix = ".tokens.json";
    if (name.size() <= suffix.size() || name.substr(name.size() - suffix.size()) != suffix) {
      continue;
    }
    const std::string stem = name.substr(0, name.size() - suffix.size());
    std::string model = *dir + "/" + stem + ".gguf";
    if (!std::filesystem::exists(model)) {
      const auto m = testing::find_fixture("models/" + stem + ".gguf");
      if (!m) continue;
      model = *m;
    }
    cases.push_back({stem, model, *dir, *dir + "/" + stem + ".exact.f32"});
  }
  add_iq4_cases(cases);
  std::sort(cases.begin(), cases.end(),
            [](const Case& a, const Case& b) { return a.name < b.name; });
  return cases;
}

bool is_parent_exact_case(const Case& c) {
  return c.exact.find(c.name + ".exact.f32") == std::string::npos;
}

bool is_f32_case(const std::string& name) {
  return name == "stories260K" || name.find("-f32") != std::string::npos;
}

TEST(DecoderParity, ReferenceLogitsTable) {
  SYN_REQUIRE_FIXTURE(dir, "reference/logits/exact_vs_llamacpp.json");
  SYN_REQUIRE_FIXTURE(iq4, "reference/arch/tiny-llama-iq4_xs.gguf");
  const std::vector<Case> cases = reference_cases();
  ASSERT_FALSE(cases.empty());
  std::string table =
      "| file | RMS to exact (ours) | RMS to exact (llama.cpp) | ratio | max abs (ours) | max abs "
      "(llama.cpp) | argmax = exact | greedy = llama.cpp | RMS, F32 activations | max abs, F32 "
      "activations | RMS to llama.cpp | ratio's standard error |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Json tokens = Json::parse(testing::read_file_text(c.dir + "/" + c.name + ".tokens.json"));
    const auto ids = tokens["input_ids"].get<std::vector<int32_t>>();
    const auto greedy_ref = tokens["greedy_ids"].get<std::vector<int32_t>>();
    const std::vector<float> exact = read_f32(c.exact);
    const std::vector<float> reference = read_f32(c.dir + "/" + c.name + ".logits.f32");
    const ModelRun run =
        run_model(c.model, ids, greedy_ref.size(), 1, selected_kernels(), DotPath::kQuantized);
    ASSERT_EQ(run.logits.size(), exact.size());
    const Distance ours = distance(run.logits, exact);
    const Distance theirs = distance(reference, exact);
    const Distance vs_ref = distance(run.logits, reference);
    const double noise = ratio_standard_error(run.logits, reference, exact, run.n_vocab);
    // Argmax agreement with exact, and where it is required.
    size_t agree = 0, required = 0, required_agree = 0;
    const size_t n = ids.size(), v = run.n_vocab;
    for (size_t r = 0; r < n; ++r) {
      const auto row = [&](const std::vector<float>& x) {
        return std::span<const float>(x.data() + r * v, v);
      };
      const int32_t e = greedy_token(row(exact));
      const bool same = greedy_token(row(run.logits)) == e;
      agree += same;
      float second = -INFINITY;
      for (size_t i = 0; i < v; ++i) {
        if (static_cast<int32_t>(i) != e) second = std::max(second, row(exact)[i]);
      }
      const double margin = static_cast<double>(row(exact)[static_cast<size_t>(e)] - second);
      if (margin > 2.0 * theirs.max_abs) {
        ++required;
        required_agree += same;
      }
    }
    EXPECT_EQ(required_agree, required) << "argmax differs from exact where the margin allows";
    const bool greedy_same = run.greedy == greedy_ref;
    if (is_f32_case(c.name)) {
      EXPECT_LE(ours.max_abs, kF32Tolerance);
      EXPECT_TRUE(greedy_same) << "greedy continuation differs from llama.cpp's";
    } else if (is_parent_exact_case(c)) {
      EXPECT_LE(ours.rms, theirs.rms * (1.0 + kRmsMargin));
    } else {
      const double margin = std::min(kRmsMarginCap, kNoiseSigmas * noise);
      EXPECT_LE(ours.rms, theirs.rms * (1.0 + margin))
          << "ratio " << ours.rms / theirs.rms << ", standard error " << noise;
    }
    // The exact-activation path: at least as accurate as llama.cpp without any margin.
    const ModelRun f32 = run_model(c.model, ids, 0, 1, selected_kernels(), DotPath::kF32);
    const Distance ours_f32 = distance(f32.logits, exact);
    if (is_parent_exact_case(c)) {
      // Against the parent's exact logits the distance is the weights' own quantization error
      // (RMS ~0.83, the same weights on both sides) plus activation rounding (~0.05) in a random
      // direction, so F32 activations need not win; the bound (ratio <= 1.02) holds.
      EXPECT_LE(ours_f32.rms, theirs.rms * (1.0 + kRmsMargin)) << "F32 activations";
    } else if (!is_f32_case(c.name)) {
      EXPECT_LE(ours_f32.rms, theirs.rms) << "F32 activations";
    }
    char line[512];
    std::snprintf(
        line, sizeof line,
        "| %s | %.3g | %.3g | %.4f | %.3g | %.3g | %zu/%zu | %s | %.3g | %.3g | %.3g | %.2g |\n",
        c.name.c_str(), ours.rms, theirs.rms, ours.rms / theirs.rms, ours.max_abs, theirs.max_abs,
        agree, n, greedy_same ? "yes" : "no", ours_f32.rms, ours_f32.max_abs, vs_ref.rms, noise);
    table += line;
  }
  std::printf("%s", table.c_str());
  if (const char* out = std::getenv("SYNAPSE_PARITY_TABLE")) {
    std::ofstream(out) << table;
  }
}

std::string greedy_text(const std::string& model_path, size_t steps, const KernelTable& kernels,
                        int threads) {
  ThreadPool pool(threads);
  CpuBackend backend(kernels, pool);
  auto model = DecoderModel::open(model_path, backend);
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  if (!model.ok()) return {};
  auto tok = tokenizer::Tokenizer::from_gguf((*model)->file().metadata());
  EXPECT_TRUE(tok.ok());
  Engine engine(**model);
  Session session(engine);
  std::vector<int32_t> out;
  int32_t token = tok->vocab().special().bos;
  for (size_t i = 0; i < steps; ++i) {
    auto logits = session.append(std::span(&token, 1));
    EXPECT_TRUE(logits.ok()) << logits.status().to_string();
    token = greedy_token(*logits);
    out.push_back(token);
  }
  auto text = tok->decode(out);
  EXPECT_TRUE(text.ok());
  return *text;
}

std::string trim_newline(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

TEST(DecoderParity, Stories260KGreedyMatchesAuthorsText) {
  SYN_REQUIRE_FIXTURE(model, "models/stories260K.gguf");
  SYN_REQUIRE_FIXTURE(n200, "golden/stories260K_llama2c_greedy_n200.txt");
  SYN_REQUIRE_FIXTURE(n256, "golden/stories260K_llama2c_greedy_n256_doc.txt");
  EXPECT_EQ(trim_newline(greedy_text(model, 200, selected_kernels(), 1)),
            trim_newline(testing::read_file_text(n200)));
  EXPECT_EQ(trim_newline(greedy_text(model, 256, selected_kernels(), 2)),
            trim_newline(testing::read_file_text(n256)));
}

TEST(DecoderParity, LogitsBitIdenticalAcrossThreadCounts) {
  for (const char* name : {"tiny-qwen2-q4_k_m", "tiny-llama-q8_0", "tiny-qwen3-f16"}) {
    SCOPED_TRACE(name);
    SYN_REQUIRE_FIXTURE(model, std::string("reference/logits/") + name + ".gguf");
    const std::vector<int32_t> ids = {1,   5,  9,  200, 17, 3,  44, 100, 12, 7,
                                      250, 33, 21, 8,   2,  60, 61, 62,  63, 64};
    const ModelRun one = run_model(model, ids, 8, 1, selected_kernels(), DotPath::kQuantized);
    for (int threads : {2, 3}) {
      const ModelRun r = run_model(model, ids, 8, threads, selected_kernels(), DotPath::kQuantized);
      EXPECT_EQ(r.logits, one.logits) << threads << " threads";
      EXPECT_EQ(r.greedy, one.greedy) << threads << " threads";
    }
  }
}

TEST(DecoderParity, GreedyIdenticalAcrossIsaLevels) {
  std::vector<std::string> models;
  for (const char* f :
       {"models/stories260K.gguf", "reference/logits/tiny-llama-f32.gguf",
        "reference/logits/tiny-qwen2-f32.gguf", "reference/logits/tiny-qwen3-f32.gguf"}) {
    SYN_REQUIRE_FIXTURE(path, f);
    models.push_back(path);
  }
  const std::vector<int32_t> ids = {1, 20, 30, 40, 50};
  for (const std::string& model : models) {
    SCOPED_TRACE(model);
    const KernelSelection scalar = select_kernels("scalar");
    const ModelRun reference = run_model(model, ids, 24, 2, scalar.table, DotPath::kQuantized);
    for (const char* isa : {"avx2", "avx512"}) {
      const KernelSelection sel = select_kernels(isa);
      if (std::string_view(sel.table.variant).find(isa) != 0) continue;  // not on this CPU
      const ModelRun r = run_model(model, ids, 24, 2, sel.table, DotPath::kQuantized);
      EXPECT_EQ(r.greedy, reference.greedy) << isa;
    }
  }
}

// Mean over positions of KL(p || q), p and q the softmax of two runs' logits rows.
double mean_kl_divergence(const std::vector<float>& p_logits, const std::vector<float>& q_logits,
                          size_t n_vocab) {
  const auto log_softmax = [n_vocab](const float* row, std::vector<double>& out) {
    double max = -INFINITY, sum = 0.0;
    for (size_t i = 0; i < n_vocab; ++i) max = std::max(max, static_cast<double>(row[i]));
    for (size_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(row[i]) - max);
    out.resize(n_vocab);
    for (size_t i = 0; i < n_vocab; ++i) out[i] = static_cast<double>(row[i]) - max - std::log(sum);
  };
  const size_t rows = p_logits.size() / n_vocab;
  double total = 0.0;
  std::vector<double> lp, lq;
  for (size_t r = 0; r < rows; ++r) {
    log_softmax(p_logits.data() + r * n_vocab, lp);
    log_softmax(q_logits.data() + r * n_vocab, lq);
    for (size_t i = 0; i < n_vocab; ++i) total += std::exp(lp[i]) * (lp[i] - lq[i]);
  }
  return total / static_cast<double>(rows);
}

// The KV cache encodings (issue 17 item 4) against the F32 cache on the reference models with
// heads of 64: the mean KL divergence of the next-token distributions over 48 positions. The
// bounds are about three times what the encodings measure here (F16 ~7e-7, Q8_0 ~4e-4,
// Q4_0 ~0.1, as `synapse perplexity --kl-divergence` measures over 40 kB of text on tiny-qwen2,
// where llama.cpp's caches of the same types give 8e-6, 6.9e-4 and 0.10: docs/serving.md). A
// cache read with a wrong scale, block or nibble order lands far above them.
TEST(DecoderParity, QuantizedKvCacheStaysCloseToF32) {
  std::vector<int32_t> ids;
  for (int32_t i = 0; i < 48; ++i) ids.push_back(1 + (i * 37 + i * i) % 290);
  for (const char* name : {"tiny-qwen2-f32", "tiny-llama-f32"}) {
    SCOPED_TRACE(name);
    SYN_REQUIRE_FIXTURE(model, std::string("reference/logits/") + name + ".gguf");
    const ModelRun f32 = run_model(model, ids, 0, 2, selected_kernels(), DotPath::kQuantized);
    ASSERT_FALSE(f32.logits.empty());
    for (const auto& [type, bound] :
         {std::pair{TensorType::kF16, 1e-6}, std::pair{TensorType::kQ8_0, 1e-3},
          std::pair{TensorType::kQ4_0, 0.15}}) {
      const ModelRun r = run_model(model, ids, 0, 2, selected_kernels(), DotPath::kQuantized, type);
      ASSERT_EQ(r.logits.size(), f32.logits.size()) << tensor_type_name(type);
      const double kl = mean_kl_divergence(f32.logits, r.logits, f32.n_vocab);
      std::printf("%s %s cache: mean KL divergence to the F32 cache %.3g\n", name,
                  std::string(tensor_type_name(type)).c_str(), kl);
      EXPECT_LT(kl, bound) << tensor_type_name(type);
      EXPECT_GT(kl, 0.0) << tensor_type_name(type) << ": identical logits, was the cache used?";
    }
  }
}

}  // namespace
}  // namespace synapse

namespace synapse {
namespace {

// Issue 7: every fixture model converted to a package gives logits bit-identical to its GGUF
// (the package keeps the source encodings byte for byte and runs from its mapped ranges), and the
// package verifies.
TEST(DecoderParity, PackagesGiveBitIdenticalLogits) {
  const auto cases = reference_cases();
  if (cases.empty()) GTEST_SKIP() << "no reference/logits fixtures";
  testing::TempDir dir;
  const std::vector<int32_t> ids = {1, 5, 9, 200, 17, 3, 44, 100};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string package = dir.file(c.name + ".synapse");
    auto written = convert_to_package(c.model, package);
    ASSERT_TRUE(written.ok()) << written.status().to_string();
    auto opened = PackageFile::open(package);
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    auto verified = verify_package(*opened);
    ASSERT_TRUE(verified.ok()) << verified.status().to_string();
    const ModelRun from_gguf =
        run_model(c.model, ids, 2, 1, selected_kernels(), DotPath::kQuantized);
    const ModelRun from_package =
        run_model(package, ids, 2, 1, selected_kernels(), DotPath::kQuantized);
    ASSERT_FALSE(from_gguf.logits.empty());
    EXPECT_EQ(from_package.logits, from_gguf.logits);
    EXPECT_EQ(from_package.greedy, from_gguf.greedy);
  }
}

}  // namespace
}  // namespace synapse
