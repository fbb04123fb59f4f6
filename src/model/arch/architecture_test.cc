// SPDX-License-Identifier: Apache-2.0
#include "model/arch/architecture.h"

#include <gtest/gtest.h>

#include "format/gguf/gguf_file.h"
#include "format/gguf/gguf_keys.h"

namespace synapse {
namespace {

HParams small(const Architecture& arch) {
  HParams hp = arch.synthetic_defaults();
  hp.n_vocab = 300;
  hp.n_ctx_train = 128;
  hp.n_embd = 64;
  hp.n_ff = 96;
  hp.n_layer = 2;
  hp.n_head = 4;
  hp.n_head_kv = arch.kind() == ModelKind::kEncoder ? 4 : 2;
  hp.head_dim_k = hp.head_dim_v = 16;
  if (hp.rope_layout != RopeLayout::kNone) hp.n_rot = 16;
  return hp;
}

// write_hparams then read_hparams gives the same values, for every architecture.
TEST(Architecture, HParamsRoundTripThroughMetadata) {
  for (std::string_view name : architecture_names()) {
    const Architecture* arch = find_architecture(name);
    ASSERT_NE(arch, nullptr);
    const HParams hp = small(*arch);
    GgufWriter writer;
    ASSERT_TRUE(arch->write_hparams(hp, writer).ok()) << name;
    const std::vector<uint8_t> bytes = *writer.write_to_buffer();
    const GgufFile file = *GgufFile::parse(bytes, std::string(name));
    const Result<HParams> read = read_model_hparams(file.metadata());
    ASSERT_TRUE(read.ok()) << name << ": " << read.status().to_string();
    EXPECT_EQ(read->arch, name);
    EXPECT_EQ(read->n_vocab, hp.n_vocab);
    EXPECT_EQ(read->n_embd, hp.n_embd);
    EXPECT_EQ(read->n_ff, hp.n_ff);
    EXPECT_EQ(read->n_layer, hp.n_layer);
    EXPECT_EQ(read->n_head, hp.n_head);
    EXPECT_EQ(read->n_head_kv, hp.n_head_kv);
    EXPECT_EQ(read->head_dim_k, hp.head_dim_k);
    EXPECT_EQ(read->n_rot, hp.n_rot);
    EXPECT_EQ(read->rope_layout, hp.rope_layout);
    EXPECT_EQ(read->rope_freq_base, hp.rope_freq_base);
    EXPECT_EQ(read->norm_eps, hp.norm_eps);
    EXPECT_EQ(read->rms_norm, hp.rms_norm);
    EXPECT_EQ(read->kind, arch->kind());
  }
}

TEST(Architecture, TensorListsMatchLlamaCppNames) {
  const Architecture& qwen3 = *find_architecture("qwen3");
  const HParams hp = small(qwen3);
  const std::vector<TensorSpec> specs = qwen3.tensors(hp);
  auto find = [&specs](std::string_view name) -> const TensorSpec* {
    for (const TensorSpec& s : specs) {
      if (s.name == name) return &s;
    }
    return nullptr;
  };
  auto shape = [&find](std::string_view name) {
    const TensorSpec* spec = find(name);
    return spec != nullptr ? spec->shape : std::vector<uint64_t>{};
  };
  EXPECT_EQ(shape("blk.1.attn_q_norm.weight"), (std::vector<uint64_t>{16}));
  EXPECT_EQ(shape("blk.0.attn_k.weight"), (std::vector<uint64_t>{64, 32}));
  EXPECT_EQ(shape("blk.0.ffn_down.weight"), (std::vector<uint64_t>{96, 64}));
  const TensorSpec* output = find("output.weight");
  ASSERT_NE(output, nullptr);
  EXPECT_FALSE(output->required);
  EXPECT_EQ(find("blk.0.attn_q.bias"), nullptr);
  const Architecture& qwen2 = *find_architecture("qwen2");
  const std::vector<TensorSpec> qwen2_specs = qwen2.tensors(small(qwen2));
  size_t biases = 0;
  for (const TensorSpec& s : qwen2_specs) biases += s.role == TensorRole::kBias && s.required;
  EXPECT_EQ(biases, 6u);  // q/k/v biases in two blocks
}

TEST(Architecture, RejectsBadHyperParameters) {
  const Architecture& llama = *find_architecture("llama");
  struct Case {
    const char* what;
    void (*mutate)(HParams&);
    const char* key;
  };
  const Case cases[] = {
      {"zero blocks", [](HParams& h) { h.n_layer = 0; }, "llama.block_count"},
      {"kv heads not dividing heads", [](HParams& h) { h.n_head_kv = 3; },
       "llama.attention.head_count_kv"},
      {"odd rope dims", [](HParams& h) { h.n_rot = 15; }, "llama.rope.dimension_count"},
      {"rope dims above head size", [](HParams& h) { h.n_rot = 32; }, "llama.rope.dimension_count"},
      {"zero embedding", [](HParams& h) { h.n_embd = 0; }, "llama.embedding_length"},
  };
  for (const Case& c : cases) {
    HParams hp = small(llama);
    c.mutate(hp);
    GgufWriter writer;
    ASSERT_TRUE(llama.write_hparams(hp, writer).ok());
    const std::vector<uint8_t> bytes = *writer.write_to_buffer();
    const GgufFile file = *GgufFile::parse(bytes, c.what);
    const Result<HParams> read = read_model_hparams(file.metadata());
    ASSERT_FALSE(read.ok()) << c.what;
    EXPECT_EQ(read.status().code(), ErrorCode::kBadValue) << c.what;
    EXPECT_EQ(read.status().where().key, c.key) << c.what;
  }
}

TEST(Architecture, UnknownArchitectureIsAStructuredError) {
  GgufWriter writer;
  ASSERT_TRUE(writer.set_string(gguf_key::kArchitecture, "falcon").ok());
  const std::vector<uint8_t> bytes = *writer.write_to_buffer();
  const GgufFile file = *GgufFile::parse(bytes, "falcon");
  const Status status = read_model_hparams(file.metadata()).status();
  EXPECT_EQ(status.code(), ErrorCode::kUnknownArchitecture);
  EXPECT_EQ(status.where().key, "general.architecture");
  EXPECT_EQ(find_architecture("falcon"), nullptr);
}

}  // namespace
}  // namespace synapse
