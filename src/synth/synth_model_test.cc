// SPDX-License-Identifier: Apache-2.0
#include "synth/synth_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "base/hash.h"
#include "format/gguf/gguf_file.h"
#include "format/gguf/gguf_keys.h"
#include "model/arch/architecture.h"
#include "model/tensor_check.h"
#include "tensor/half.h"
#include "tensor/quant.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

TEST(SynthModel, EveryArchitecturePassesItsOwnChecks) {
  testing::TempDir dir;
  for (std::string_view arch_name : architecture_names()) {
    SynthOptions o;
    o.arch = std::string(arch_name);
    const std::string path = dir.file(o.arch + ".gguf");
    ASSERT_TRUE(synthesize_model(o, path).ok()) << arch_name;
    const Result<GgufFile> file = GgufFile::open(path);
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    const Result<HParams> hp = read_model_hparams(file->metadata());
    ASSERT_TRUE(hp.ok()) << hp.status().to_string();
    EXPECT_EQ(hp->n_embd, 64u);
    EXPECT_EQ(hp->n_layer, 2u);
    const TensorCheckReport report = check_model_tensors(*find_architecture(arch_name), *hp, *file);
    EXPECT_TRUE(report.ok()) << arch_name << ": " << report.problems.front().to_string();
    EXPECT_TRUE(report.unknown.empty());
    EXPECT_EQ(report.present_required, report.expected_required);
    EXPECT_EQ(report.tied_output, find_architecture(arch_name)->synthetic_tied_output())
        << arch_name;
    EXPECT_EQ(*file->metadata().get_u32("synapse.synth.version"), kSynthGeneratorVersion);
  }
}

TEST(SynthModel, SameOptionsSameBytesOtherSeedOtherBytes) {
  testing::TempDir dir;
  SynthOptions o;
  o.arch = "qwen2";
  o.type_attention = TensorType::kF16;
  o.type_embedding = TensorType::kBF16;
  ASSERT_TRUE(synthesize_model(o, dir.file("a.gguf")).ok());
  ASSERT_TRUE(synthesize_model(o, dir.file("b.gguf")).ok());
  EXPECT_EQ(testing::read_file_bytes(dir.file("a.gguf")),
            testing::read_file_bytes(dir.file("b.gguf")));
  o.seed = 43;
  ASSERT_TRUE(synthesize_model(o, dir.file("c.gguf")).ok());
  EXPECT_NE(testing::read_file_bytes(dir.file("a.gguf")),
            testing::read_file_bytes(dir.file("c.gguf")));
}

TEST(SynthModel, GeneratorOutputIsPinned) {
  // The bytes of the default model are part of the contract (tests elsewhere rely on them).
  // If this fails after a deliberate generator change, bump kSynthGeneratorVersion and update
  // the digest; otherwise something changed the output by accident.
  testing::TempDir dir;
  ASSERT_TRUE(synthesize_model(SynthOptions{}, dir.file("default.gguf")).ok());
  const Result<Sha256Digest> digest = sha256_file(dir.file("default.gguf"));
  ASSERT_TRUE(digest.ok());
  EXPECT_EQ(to_hex(*digest), SYNAPSE_EXPECTED_DEFAULT_SYNTH_SHA256);
}

TEST(SynthModel, TypesAndScales) {
  testing::TempDir dir;
  SynthOptions o;
  o.arch = "llama";
  o.n_embd = 128;
  o.n_head = 4;
  o.type_feed_forward = TensorType::kF16;
  o.type_output = TensorType::kBF16;
  ASSERT_TRUE(synthesize_model(o, dir.file("m.gguf")).ok());
  const GgufFile file = *GgufFile::open(dir.file("m.gguf"));
  EXPECT_EQ(file.find_tensor("blk.0.ffn_up.weight")->type, TensorType::kF16);
  EXPECT_EQ(file.find_tensor("output.weight")->type, TensorType::kBF16);
  EXPECT_EQ(file.find_tensor("blk.0.attn_q.weight")->type, TensorType::kF32);
  EXPECT_EQ(file.find_tensor("blk.0.attn_norm.weight")->type, TensorType::kF32);
  // Norm weights are 1 + N(0, 0.1); attention matrices have standard deviation 1/sqrt(fan_in).
  const GgufTensorInfo& norm = *file.find_tensor("blk.0.attn_norm.weight");
  const auto* values = reinterpret_cast<const float*>(file.tensor_data(norm).data());
  double mean = 0;
  for (uint64_t i = 0; i < norm.element_count(); ++i) mean += static_cast<double>(values[i]);
  mean /= static_cast<double>(norm.element_count());
  EXPECT_NEAR(mean, 1.0, 0.05);
  const GgufTensorInfo& q = *file.find_tensor("blk.0.attn_q.weight");
  const auto* weights = reinterpret_cast<const float*>(file.tensor_data(q).data());
  double sum_sq = 0;
  for (uint64_t i = 0; i < q.element_count(); ++i) {
    sum_sq += static_cast<double>(weights[i]) * static_cast<double>(weights[i]);
  }
  EXPECT_NEAR(std::sqrt(sum_sq / static_cast<double>(q.element_count())), 1.0 / std::sqrt(128.0),
              0.005);
  const GgufTensorInfo& up = *file.find_tensor("blk.0.ffn_up.weight");
  const auto* halves = reinterpret_cast<const uint16_t*>(file.tensor_data(up).data());
  EXPECT_TRUE(std::isfinite(f16_to_f32(halves[0])));
}

// Every weight type: the file holds that type, and its values are the F32 model's values within
// the type's quantization error. Bounds: a b-bit level grid over a block whose values span at
// most 2 * 2 sqrt(3) sigma (the generator's bell is bounded) has a step of 4 sqrt(3) sigma /
// (2^b - 1) and a rounding error of at most half a step, an RMS of step / sqrt(12) for
// uniformly spread values; the bounds below are that RMS (relative to sigma) with a margin of
// about 1.5 for the scale quantization of the K-quants.
TEST(SynthModel, EveryWeightTypeRoundTrips) {
  struct Case {
    TensorType type;
    double max_relative_rms;
  };
  constexpr Case kCases[] = {
      {TensorType::kF16, 0.001},
      {TensorType::kBF16, 0.005},
      {TensorType::kQ8_0, 0.01},
      {TensorType::kQ6_K, 0.04},
      {TensorType::kQ5_0, 0.08},
      {TensorType::kQ5_1, 0.08},
      {TensorType::kQ5_K, 0.08},
      {TensorType::kQ4_0, 0.16},
      {TensorType::kQ4_1, 0.16},
      {TensorType::kQ4_K, 0.16},
      {TensorType::kQ3_K, 0.35},
      {TensorType::kQ2_K, 0.8},
      // Sixteen non-uniform levels, denser near zero: no worse than the uniform 4-bit grid.
      {TensorType::kIQ4_NL, 0.16},
      {TensorType::kIQ4_XS, 0.16}};
  testing::TempDir dir;
  SynthOptions base;
  base.arch = "qwen2";
  base.n_embd = 256;
  base.n_ff = 512;
  base.n_head = 4;
  base.n_head_kv = 2;
  base.n_layer = 1;
  ASSERT_TRUE(synthesize_model(base, dir.file("f32.gguf")).ok());
  const GgufFile reference = *GgufFile::open(dir.file("f32.gguf"));
  const GgufTensorInfo& want_info = *reference.find_tensor("blk.0.ffn_up.weight");
  const auto* want = reinterpret_cast<const float*>(reference.tensor_data(want_info).data());
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(tensor_type_name(c.type)));
    SynthOptions o = base;
    o.type_attention = o.type_feed_forward = o.type_embedding = o.type_output = c.type;
    const std::string path = dir.file(std::string(tensor_type_name(c.type)) + ".gguf");
    const Status status = synthesize_model(o, path);
    ASSERT_TRUE(status.ok()) << status.to_string();
    const GgufFile file = *GgufFile::open(path);
    const GgufTensorInfo& info = *file.find_tensor("blk.0.ffn_up.weight");
    ASSERT_EQ(info.type, c.type);
    const size_t n = info.element_count();
    std::vector<float> got(n);
    std::vector<uint32_t> aligned((info.bytes + 3) / 4);
    std::memcpy(aligned.data(), file.tensor_data(info).data(), info.bytes);
    dequantize_row(c.type, {reinterpret_cast<const uint8_t*>(aligned.data()), info.bytes}, got);
    double err = 0.0, scale = 0.0;
    for (size_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(got[i]) - static_cast<double>(want[i]);
      err += d * d;
      scale += static_cast<double>(want[i]) * static_cast<double>(want[i]);
    }
    EXPECT_LE(std::sqrt(err / scale), c.max_relative_rms);
    EXPECT_EQ(file.find_tensor("blk.0.attn_norm.weight")->type, TensorType::kF32);
  }
}

TEST(SynthModel, VocabularyFromAnotherFile) {
  testing::TempDir dir;
  SynthOptions source;
  source.arch = "qwen3";
  source.n_vocab = 300;
  ASSERT_TRUE(synthesize_model(source, dir.file("source.gguf")).ok());
  SynthOptions o;
  o.arch = "llama";
  o.vocab_from = dir.file("source.gguf");
  ASSERT_TRUE(synthesize_model(o, dir.file("copy.gguf")).ok());
  const GgufFile src = *GgufFile::open(dir.file("source.gguf"));
  const GgufFile copy = *GgufFile::open(dir.file("copy.gguf"));
  EXPECT_EQ(*copy.metadata().get_u32("llama.vocab_size"), 300u);
  const auto a = *src.metadata().get_string_array(gguf_key::kTokenizerTokens);
  const auto b = *copy.metadata().get_string_array(gguf_key::kTokenizerTokens);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
  EXPECT_EQ(copy.find_tensor("token_embd.weight")->dims[1], 300u);
  o.n_vocab = 5;
  EXPECT_EQ(synthesize_model(o, dir.file("bad.gguf")).code(), ErrorCode::kInvalidArgument);
}

TEST(SynthModel, RejectsBadOptions) {
  testing::TempDir dir;
  SynthOptions o;
  o.arch = "gpt-j";
  EXPECT_EQ(synthesize_model(o, dir.file("x.gguf")).code(), ErrorCode::kUnknownArchitecture);
  o = SynthOptions{};
  o.n_head_kv = 3;  // 4 heads are not a multiple of 3 KV heads
  const Status kv = synthesize_model(o, dir.file("x.gguf"));
  EXPECT_EQ(kv.code(), ErrorCode::kBadValue);
  EXPECT_EQ(kv.where().key, "llama.attention.head_count_kv");
  o = SynthOptions{};
  o.n_embd = 66;  // not a multiple of 4 heads
  EXPECT_EQ(synthesize_model(o, dir.file("x.gguf")).code(), ErrorCode::kInvalidArgument);
  o = SynthOptions{};
  o.type_attention = TensorType::kIQ2_XXS;  // no quantizer for the i-quants
  EXPECT_EQ(synthesize_model(o, dir.file("x.gguf")).code(), ErrorCode::kUnsupported);
  o = SynthOptions{};
  o.type_attention = TensorType::kQ4_K;  // rows of 64 are not whole 256-element super-blocks
  const Status rows = synthesize_model(o, dir.file("x.gguf"));
  EXPECT_EQ(rows.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(rows.where().tensor, "blk.0.attn_q.weight");
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.gguf")));
}

}  // namespace
}  // namespace synapse

namespace synapse {
namespace {

TEST(SynthModel, BertWithClassificationHead) {
  testing::TempDir dir;
  SynthOptions o;
  o.arch = "bert";
  o.classifier_labels = 2;
  ASSERT_TRUE(synthesize_model(o, dir.file("rr.gguf")).ok());
  const Result<GgufFile> file = GgufFile::open(dir.file("rr.gguf"));
  ASSERT_TRUE(file.ok());
  const Result<HParams> hp = read_model_hparams(file->metadata());
  ASSERT_TRUE(hp.ok()) << hp.status().to_string();
  EXPECT_EQ(hp->n_cls_out, 2u);
  EXPECT_EQ(hp->pooling, PoolingType::kRank);
  const TensorCheckReport report = check_model_tensors(*find_architecture("bert"), *hp, *file);
  EXPECT_TRUE(report.ok());
  const TensorView* out = file->tensor_view("cls.output.weight");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->dims[1], 2u);
  EXPECT_NE(file->tensor_view("cls.weight"), nullptr);
  // Without labels the head is left out; a classification head on a decoder is refused, a
  // pooling type is written (decoders embed too).
  o.classifier_labels = 0;
  o.pooling = PoolingType::kCls;
  ASSERT_TRUE(synthesize_model(o, dir.file("emb.gguf")).ok());
  const Result<GgufFile> emb = GgufFile::open(dir.file("emb.gguf"));
  EXPECT_EQ(emb->tensor_view("cls.output.weight"), nullptr);
  EXPECT_EQ(read_model_hparams(emb->metadata())->pooling, PoolingType::kCls);
  o.arch = "llama";
  o.pooling = PoolingType::kMean;
  ASSERT_TRUE(synthesize_model(o, dir.file("llama.gguf")).ok());
  const Result<GgufFile> llama = GgufFile::open(dir.file("llama.gguf"));
  EXPECT_EQ(read_model_hparams(llama->metadata())->pooling, PoolingType::kMean);
  o.pooling.reset();
  ASSERT_TRUE(synthesize_model(o, dir.file("llama-last.gguf")).ok());
  const Result<GgufFile> last = GgufFile::open(dir.file("llama-last.gguf"));
  EXPECT_FALSE(last->metadata().contains("llama.pooling_type"));  // the default is not written
  EXPECT_EQ(read_model_hparams(last->metadata())->pooling, PoolingType::kLast);
  o.classifier_labels = 1;
  EXPECT_EQ(synthesize_model(o, dir.file("llama-cls.gguf")).code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace synapse
