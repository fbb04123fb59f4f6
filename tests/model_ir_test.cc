// SPDX-License-Identifier: Apache-2.0
// Models the IR rejects fail at load, before any token, with a code naming the region, op or
// tensor: unknown architecture, missing tensor, a type with no kernel, a context beyond the
// model's, bad head geometry. And the plan names a kernel for every op.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include "backend/cpu_backend.h"
#include "kernels/kernel_selection.h"
#include "model/decoder.h"
#include "synth/synth_model.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

class ModelIrTest : public ::testing::Test {
 protected:
  std::string synth(SynthOptions o, const std::string& name) {
    const std::string path = dir_.file(name);
    const Status s = synthesize_model(o, path);
    EXPECT_TRUE(s.ok()) << s.to_string();
    return path;
  }
  void patch(const std::string& path, const std::string& from, const std::string& to) {
    std::vector<uint8_t> bytes = testing::read_file_bytes(path);
    std::string s(bytes.begin(), bytes.end());
    size_t n = 0;
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + 1), ++n) {
      s.replace(at, from.size(), to);
    }
    ASSERT_GT(n, 0u);
    testing::write_file_bytes(path, std::vector<uint8_t>(s.begin(), s.end()));
  }
  Status open(const std::string& path, const DecoderOptions& options = {}) {
    return DecoderModel::open(path, backend_, options).status();
  }

  testing::TempDir dir_;
  ThreadPool pool_{1};
  CpuBackend backend_{selected_kernels(), pool_};
};

TEST_F(ModelIrTest, PlanNamesAKernelForEveryOp) {
  SynthOptions o;
  o.arch = "qwen3";
  o.type_attention = TensorType::kQ4_K;
  o.n_embd = 512;
  o.n_head = 8;
  o.head_dim = 32;  // head size != n_embd / n_head
  o.n_ff = 256;
  const std::string path = synth(o, "q.gguf");
  auto model = DecoderModel::open(path, backend_);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const ExecutionPlan& plan = (*model)->plan();
  ASSERT_EQ(plan.regions.size(), 1u + 2 * 2 + 1);
  EXPECT_EQ(plan.regions[1].name, "blk.0.attention");
  for (const PlanRegion& r : plan.regions) {
    for (const PlanOp& op : r.ops) EXPECT_FALSE(op.kernel.empty()) << r.name << " " << op.op.label;
  }
  const std::string text = format_plan((*model)->ir(), plan);
  EXPECT_NE(text.find("attn_q_norm.weight"), std::string::npos) << text;
  EXPECT_NE(text.find("Q4_K"), std::string::npos) << text;
}

// Gemma's 27B models scale queries by 1/sqrt(n_embd / n_head) (query_pre_attn_scalar), every
// other size by 1/sqrt(head size); the 27B is told by its block count, as llama.cpp tells it.
TEST_F(ModelIrTest, GemmaTwentySevenBScalesQueriesByTheWidthPerHead) {
  for (const auto& [arch, blocks_27b] : {std::pair<const char*, uint32_t>{"gemma2", 46},
                                         std::pair<const char*, uint32_t>{"gemma3", 62}}) {
    for (const uint32_t blocks : {uint32_t{2}, blocks_27b}) {
      SynthOptions o;
      o.arch = arch;
      o.n_layer = blocks;
      o.n_embd = 96;
      o.n_head = 2;
      o.head_dim = 32;  // n_embd / n_head is 48
      o.n_ff = 64;
      auto model = DecoderModel::open(synth(o, std::string(arch) + ".gguf"), backend_);
      ASSERT_TRUE(model.ok()) << model.status().to_string();
      const float expected = 1.0f / std::sqrt(blocks == blocks_27b ? 48.0f : 32.0f);
      size_t attention_ops = 0;
      for (const IrRegion& r : (*model)->ir().regions) {
        for (const IrOp& op : r.ops) {
          if (op.kind != BackendOp::kAttention) continue;
          ++attention_ops;
          EXPECT_EQ(op.attention_scale, expected) << arch << " " << blocks << " " << r.name();
        }
      }
      EXPECT_EQ(attention_ops, blocks);
    }
  }
}

TEST_F(ModelIrTest, RejectsBeforeAnythingRuns) {
  SynthOptions o;
  const std::string good = synth(o, "good.gguf");
  ASSERT_TRUE(open(good).ok());

  const std::string unknown = synth(o, "unknown.gguf");
  patch(unknown, "llama", "xyzzy");
  EXPECT_EQ(open(unknown).code(), ErrorCode::kUnknownArchitecture);

  const std::string missing = synth(o, "missing.gguf");
  patch(missing, "blk.1.attn_k.weight", "blk.1.attn_k.weighx");
  const Status m = open(missing);
  EXPECT_EQ(m.code(), ErrorCode::kMissingTensor) << m.to_string();
  EXPECT_EQ(m.where().tensor, "blk.1.attn_k.weight") << m.to_string();

  DecoderOptions big;
  big.n_ctx = 100000;  // the synthetic model was trained on 512
  const Status c = open(good, big);
  EXPECT_EQ(c.code(), ErrorCode::kBadValue) << c.to_string();
  EXPECT_NE(c.message().find("context"), std::string::npos) << c.to_string();

  DecoderOptions q4_1_cache;
  q4_1_cache.kv_type = TensorType::kQ4_1;  // no KV-cache kernel for that type
  const Status k = open(good, q4_1_cache);
  EXPECT_EQ(k.code(), ErrorCode::kUnsupported) << k.to_string();
  EXPECT_NE(k.message().find("blk.0.attention"), std::string::npos) << k.to_string();

  // A block-quantized cache needs heads of whole 32-value blocks: this model's are 16.
  DecoderOptions q8_cache;
  q8_cache.kv_type = TensorType::kQ8_0;
  const Status q = open(good, q8_cache);
  EXPECT_EQ(q.code(), ErrorCode::kUnsupported) << q.to_string();
  EXPECT_NE(q.message().find("blocks of 32"), std::string::npos) << q.to_string();
  SynthOptions wide_heads;
  wide_heads.n_head = 2;
  wide_heads.n_head_kv = 1;
  ASSERT_EQ(wide_heads.n_embd / wide_heads.n_head % 32, 0u);
  EXPECT_TRUE(open(synth(wide_heads, "wide.gguf"), q8_cache).ok());

  SynthOptions gqa;
  gqa.n_head = 4;
  gqa.n_head_kv = 3;  // does not divide the query heads
  const std::string bad_gqa = dir_.file("gqa.gguf");
  if (synthesize_model(gqa, bad_gqa).ok()) {
    const Status g = open(bad_gqa);
    EXPECT_FALSE(g.ok());
  }
}

}  // namespace
}  // namespace synapse
