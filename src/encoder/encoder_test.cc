// SPDX-License-Identifier: Apache-2.0
// The encoder against a straightforward float64 BERT written here from the definition (token +
// type + position embeddings, LayerNorm, post-norm blocks, bidirectional softmax attention, tanh
// GELU, pooling, the tanh classification head), on synthetic models from `synth`; packing and
// thread-count invariance; every ISA table; the Embedder's errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "encoder/embedder.h"
#include "encoder/encoder_forward.h"
#include "encoder/pooling.h"
#include "format/model_file.h"
#include "kernels/kernel_table.h"
#include "synth/synth_model.h"
#include "tests/support/poison_model.h"
#include "tests/support/test_support.h"

namespace synapse {
namespace {

using Vec = std::vector<double>;

// The float64 reference. Weights must be F32 (synth's default).
class ReferenceBert {
 public:
  explicit ReferenceBert(const ModelFile& file, const HParams& hp) : file_(file), hp_(hp) {}

  Vec tensor(const std::string& name) const {
    const TensorView* t = file_.tensor_view(name);
    EXPECT_NE(t, nullptr) << name;
    EXPECT_EQ(t->type, TensorType::kF32) << name;
    Vec out(t->element_count());
    const auto* p = reinterpret_cast<const float*>(t->data.data());
    for (size_t i = 0; i < out.size(); ++i) out[i] = p[i];
    return out;
  }

  // y = W x + b for x holding n rows of k.
  Vec linear(const std::string& prefix, const Vec& x, size_t n, size_t k) const {
    const Vec w = tensor(prefix + ".weight");
    const Vec b = tensor(prefix + ".bias");
    const size_t m = b.size();
    Vec y(n * m);
    for (size_t r = 0; r < n; ++r) {
      for (size_t o = 0; o < m; ++o) {
        double s = b[o];
        for (size_t i = 0; i < k; ++i) s += w[o * k + i] * x[r * k + i];
        y[r * m + o] = s;
      }
    }
    return y;
  }

  void layer_norm(const std::string& prefix, Vec& x, size_t n) const {
    const size_t d = hp_.n_embd;
    const Vec w = tensor(prefix + ".weight");
    const Vec b = tensor(prefix + ".bias");
    for (size_t r = 0; r < n; ++r) {
      double mean = 0.0, var = 0.0;
      for (size_t i = 0; i < d; ++i) mean += x[r * d + i];
      mean /= static_cast<double>(d);
      for (size_t i = 0; i < d; ++i) var += (x[r * d + i] - mean) * (x[r * d + i] - mean);
      var /= static_cast<double>(d);
      for (size_t i = 0; i < d; ++i) {
        x[r * d + i] =
            (x[r * d + i] - mean) / std::sqrt(var + static_cast<double>(hp_.norm_eps)) * w[i] +
            b[i];
      }
    }
  }

  // Hidden states of one sequence (n rows of n_embd).
  Vec forward(const std::vector<int32_t>& tokens, const std::vector<int32_t>& types) const {
    const size_t n = tokens.size();
    const size_t d = hp_.n_embd;
    const Vec tok = tensor("token_embd.weight");
    const Vec typ = tensor("token_types.weight");
    const Vec pos = tensor("position_embd.weight");
    Vec x(n * d);
    for (size_t t = 0; t < n; ++t) {
      const size_t type = types.empty() ? 0 : static_cast<size_t>(types[t]);
      for (size_t i = 0; i < d; ++i) {
        x[t * d + i] =
            tok[static_cast<size_t>(tokens[t]) * d + i] + typ[type * d + i] + pos[t * d + i];
      }
    }
    layer_norm("token_embd_norm", x, n);
    const size_t heads = hp_.n_head;
    const size_t hd = hp_.head_dim_k;
    for (uint32_t b = 0; b < hp_.n_layer; ++b) {
      const std::string p = "blk." + std::to_string(b) + ".";
      const Vec q = linear(p + "attn_q", x, n, d);
      const Vec k = linear(p + "attn_k", x, n, d);
      const Vec v = linear(p + "attn_v", x, n, d);
      Vec a(n * d);
      for (size_t h = 0; h < heads; ++h) {
        for (size_t i = 0; i < n; ++i) {
          Vec s(n);
          double mx = -std::numeric_limits<double>::infinity();
          for (size_t j = 0; j < n; ++j) {
            double dot = 0.0;
            for (size_t e = 0; e < hd; ++e) dot += q[i * d + h * hd + e] * k[j * d + h * hd + e];
            s[j] = dot / std::sqrt(static_cast<double>(hd));
            mx = std::max(mx, s[j]);
          }
          double sum = 0.0;
          for (double& e : s) sum += (e = std::exp(e - mx));
          for (size_t e = 0; e < hd; ++e) {
            double acc = 0.0;
            for (size_t j = 0; j < n; ++j) acc += s[j] / sum * v[j * d + h * hd + e];
            a[i * d + h * hd + e] = acc;
          }
        }
      }
      Vec o = linear(p + "attn_output", a, n, d);
      for (size_t i = 0; i < x.size(); ++i) o[i] += x[i];
      layer_norm(p + "attn_output_norm", o, n);
      x = o;
      Vec u = linear(p + "ffn_up", x, n, d);
      for (double& e : u) {
        e = 0.5 * e * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (e + 0.044715 * e * e * e)));
      }
      Vec f = linear(p + "ffn_down", u, n, hp_.n_ff);
      for (size_t i = 0; i < x.size(); ++i) f[i] += x[i];
      layer_norm(p + "layer_output_norm", f, n);
      x = f;
    }
    return x;
  }

  // The classification head on the CLS row: out(tanh(dense(h_cls))), first output.
  double score(const Vec& hidden) const {
    const size_t d = hp_.n_embd;
    Vec cls(hidden.begin(), hidden.begin() + static_cast<std::ptrdiff_t>(d));
    Vec dense = linear("cls", cls, 1, d);
    for (double& e : dense) e = std::tanh(e);
    return linear("cls.output", dense, 1, d)[0];
  }

 private:
  const ModelFile& file_;
  const HParams& hp_;
};

// Tolerance of the F32 encoder against float64, in units of the hidden states (LayerNorm makes
// them O(1)). Each F32 dot product of length k errs by about sqrt(k) * eps relative (random
// rounding); LayerNorm divides by a standard deviation of O(1); the errors of the two blocks'
// six products add up. With the largest k here (n_ff = 192) that is ~1e-5; the bound leaves a
// factor of ~10 for the SIMD exp in the softmax and GELU (kernels/tolerance.h bounds them at a
// few ulp).
constexpr double kF32VersusF64 = 1e-4;

struct Fixture {
  testing::TempDir dir;
  std::string path;
  std::unique_ptr<ModelFile> file;
  std::unique_ptr<EncoderModel> model;
};

std::unique_ptr<Fixture> make_model(SynthOptions o) {
  auto f = std::make_unique<Fixture>();
  o.arch = "bert";
  f->path = f->dir.file("bert.gguf");
  const Status st = synthesize_model(o, f->path);
  EXPECT_TRUE(st.ok()) << st.to_string();
  auto file = open_model_file(f->path);
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  f->file = std::move(file).value();
  auto model = EncoderModel::load(*f->file);
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  f->model = std::move(model).value();
  return f;
}

// Deterministic token sequences of the given lengths: [CLS]=first id ... ids in range.
std::vector<std::vector<int32_t>> sequences(const std::vector<size_t>& lengths, uint32_t n_vocab) {
  std::vector<std::vector<int32_t>> out;
  uint32_t state = 12345;
  for (const size_t len : lengths) {
    std::vector<int32_t> s;
    for (size_t i = 0; i < len; ++i) {
      state = state * 1664525u + 1013904223u;
      s.push_back(static_cast<int32_t>((state >> 8) % n_vocab));
    }
    out.push_back(s);
  }
  return out;
}

double max_abs_diff(std::span<const float> a, const Vec& b) {
  double m = 0.0;
  for (size_t i = 0; i < b.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

TEST(EncoderForward, MatchesFloat64ReferenceOnEveryIsaWithPackedSequences) {
  const auto f = make_model({});
  const HParams& hp = f->model->hparams();
  const ReferenceBert ref(*f->file, hp);
  const std::vector<size_t> lengths = {1, 7, 19, 3, 40};
  const auto seqs = sequences(lengths, hp.n_vocab);
  std::vector<int32_t> tokens, types;
  std::vector<uint32_t> lens;
  std::vector<Vec> expected;
  for (size_t s = 0; s < seqs.size(); ++s) {
    tokens.insert(tokens.end(), seqs[s].begin(), seqs[s].end());
    std::vector<int32_t> t(seqs[s].size(), static_cast<int32_t>(s % 2));
    types.insert(types.end(), t.begin(), t.end());
    lens.push_back(static_cast<uint32_t>(seqs[s].size()));
    expected.push_back(ref.forward(seqs[s], t));
  }
  for (const KernelTable* kernels : runnable_kernel_tables()) {
    for (const int threads : {1, 3}) {
      ThreadPool pool(threads);
      EncoderWorkspace ws;
      ASSERT_TRUE(encoder_forward(*kernels, *f->model,
                                  {.tokens = tokens, .token_types = types, .seq_lengths = lens}, ws,
                                  pool)
                      .ok());
      size_t offset = 0;
      for (size_t s = 0; s < seqs.size(); ++s) {
        const auto got = ws.hidden().subspan(offset * hp.n_embd, lens[s] * hp.n_embd);
        EXPECT_LT(max_abs_diff(got, expected[s]), kF32VersusF64)
            << kernels->variant << " threads " << threads << " sequence " << s;
        offset += lens[s];
      }
    }
  }
}

TEST(EncoderForward, PackingDoesNotChangeResults) {
  const auto f = make_model({});
  const HParams& hp = f->model->hparams();
  const auto seqs =
      sequences({5, 33, 12, 2, 17, 9, 21, 4, 30, 11, 6, 8, 14, 3, 25, 19, 7}, hp.n_vocab);
  ThreadPool pool(2);
  std::vector<int32_t> tokens;
  std::vector<uint32_t> lens;
  for (const auto& s : seqs) {
    tokens.insert(tokens.end(), s.begin(), s.end());
    lens.push_back(static_cast<uint32_t>(s.size()));
  }
  EncoderWorkspace packed;
  ASSERT_TRUE(
      encoder_forward(*f->model, {.tokens = tokens, .seq_lengths = lens}, packed, pool).ok());
  size_t offset = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    EncoderWorkspace alone;
    const uint32_t len = lens[s];
    ASSERT_TRUE(
        encoder_forward(*f->model, {.tokens = seqs[s], .seq_lengths = {&len, 1}}, alone, pool)
            .ok());
    const auto a = alone.hidden();
    const auto p = packed.hidden().subspan(offset * hp.n_embd, a.size());
    // Alone and packed differ only in the order the matrix kernels sum (packed tiles versus
    // row dots): the F32 rounding bound, not a modelling difference.
    double m = 0.0;
    for (size_t i = 0; i < a.size(); ++i)
      m = std::max(m, static_cast<double>(std::abs(a[i] - p[i])));
    EXPECT_LT(m, kF32VersusF64) << "sequence " << s;
    offset += len;
  }
}

TEST(EncoderForward, RejectsBadBatches) {
  SynthOptions o;
  o.n_ctx = 16;
  const auto f = make_model(o);
  ThreadPool pool(1);
  EncoderWorkspace ws;
  const std::vector<int32_t> long_seq(17, 1);
  const uint32_t len17 = 17;
  EXPECT_EQ(
      encoder_forward(*f->model, {.tokens = long_seq, .seq_lengths = {&len17, 1}}, ws, pool).code(),
      ErrorCode::kContextLengthExceeded);
  const std::vector<int32_t> bad_id = {1, 100000};
  const uint32_t len2 = 2;
  EXPECT_EQ(
      encoder_forward(*f->model, {.tokens = bad_id, .seq_lengths = {&len2, 1}}, ws, pool).code(),
      ErrorCode::kInvalidArgument);
  const std::vector<int32_t> ok_ids = {1, 2};
  const std::vector<int32_t> bad_types = {0, 2};
  EXPECT_EQ(encoder_forward(*f->model,
                            {.tokens = ok_ids, .token_types = bad_types, .seq_lengths = {&len2, 1}},
                            ws, pool)
                .code(),
            ErrorCode::kInvalidArgument);
}

TEST(EncoderForward, GeluTableIsCloseToTheExactFunction) {
  std::vector<float> x, exact, table;
  for (float v = -12.0f; v <= 12.0f; v += 0.01f) x.push_back(v);
  exact.resize(x.size());
  table.resize(x.size());
  reference_kernels().gelu_tanh(x.data(), exact.data(), x.size());
  gelu_tanh_f16_table(x.data(), table.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    // Two half-precision roundings (input and output): 2 * 2^-11 relative, plus the absolute
    // half-ulp of subnormal-range outputs.
    EXPECT_NEAR(table[i], exact[i],
                2.0 * std::ldexp(1.0, -11) * std::abs(static_cast<double>(x[i])) + 1e-4)
        << x[i];
  }
}

std::unique_ptr<Embedder> open_embedder(const std::string& path) {
  auto file = open_model_file(path);
  EXPECT_TRUE(file.ok());
  auto e = Embedder::open(std::move(file).value());
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return std::move(e).value();
}

TEST(Embedder, PoolingAndNormalization) {
  const auto f = make_model({});
  const ReferenceBert ref(*f->file, f->model->hparams());
  auto embedder = open_embedder(f->path);
  ThreadPool pool(2);
  const std::vector<std::string> texts = {"the cat sat", "a", "on the mat with a hat and a bat"};
  const size_t d = embedder->n_embd();
  for (const PoolingType pooling :
       {PoolingType::kMean, PoolingType::kCls, PoolingType::kLast, PoolingType::kNone}) {
    for (const bool normalize : {false, true}) {
      auto r = embedder->embed(texts, {.pooling = pooling, .normalize = normalize}, pool);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      ASSERT_EQ(r->items.size(), texts.size());
      for (size_t i = 0; i < texts.size(); ++i) {
        const auto ids = embedder->tokenizer().encode(texts[i]);
        const Vec hidden = ref.forward(ids, {});
        const size_t n = ids.size();
        EXPECT_EQ(r->items[i].n_tokens, n);
        const size_t rows = pooling == PoolingType::kNone ? n : 1;
        ASSERT_EQ(r->items[i].values.size(), rows * d);
        for (size_t row = 0; row < rows; ++row) {
          Vec want(d, 0.0);
          for (size_t e = 0; e < d; ++e) {
            switch (pooling) {
              case PoolingType::kMean:
                for (size_t t = 0; t < n; ++t)
                  want[e] += hidden[t * d + e] / static_cast<double>(n);
                break;
              case PoolingType::kLast:
                want[e] = hidden[(n - 1) * d + e];
                break;
              case PoolingType::kCls:
                want[e] = hidden[e];
                break;
              default:
                want[e] = hidden[row * d + e];
            }
          }
          if (normalize) {
            double norm = 0.0;
            for (const double v : want) norm += v * v;
            for (double& v : want) v /= std::sqrt(norm);
          }
          const auto got = std::span<const float>(r->items[i].values).subspan(row * d, d);
          EXPECT_LT(max_abs_diff(got, want), kF32VersusF64)
              << pooling_type_name(pooling) << " " << normalize << " input " << i;
        }
      }
    }
  }
}

TEST(Embedder, BatchBudgetDoesNotChangeResults) {
  const auto f = make_model({});
  auto embedder = open_embedder(f->path);
  ThreadPool pool(2);
  std::vector<std::string> texts;
  for (int i = 0; i < 20; ++i)
    texts.push_back(
        std::string(static_cast<size_t>(i % 7 + 1) * 4, 'a' + static_cast<char>(i % 26)) + " the");
  auto big = embedder->embed(texts, {}, pool);
  embedder->set_max_batch_tokens(8);
  auto small = embedder->embed(texts, {}, pool);
  ASSERT_TRUE(big.ok() && small.ok());
  EXPECT_EQ(big->prompt_tokens, small->prompt_tokens);
  for (size_t i = 0; i < texts.size(); ++i) {
    for (size_t e = 0; e < embedder->n_embd(); ++e) {
      EXPECT_NEAR(big->items[i].values[e], small->items[i].values[e], kF32VersusF64);
    }
  }
}

TEST(Embedder, ErrorsAndTruncation) {
  SynthOptions o;
  o.n_ctx = 8;
  const auto f = make_model(o);
  auto embedder = open_embedder(f->path);
  ThreadPool pool(1);
  EXPECT_EQ(embedder->embed({}, {}, pool).status().code(), ErrorCode::kInvalidArgument);
  const std::vector<std::string> empty = {"ok", ""};
  const auto e = embedder->embed(empty, {}, pool);
  EXPECT_EQ(e.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(e.status().where().field, "input[1]");
  const std::vector<std::string> long_text = {"a b c d e f g h i j k l m n o p"};
  const auto too_long = embedder->embed(long_text, {}, pool);
  EXPECT_EQ(too_long.status().code(), ErrorCode::kContextLengthExceeded);
  EXPECT_EQ(too_long.status().where().field, "input[0]");
  const auto cut =
      embedder->embed(long_text, {.pooling = PoolingType::kNone, .truncate = true}, pool);
  ASSERT_TRUE(cut.ok()) << cut.status().to_string();
  EXPECT_EQ(cut->items[0].n_tokens, 8u);
  EXPECT_TRUE(cut->items[0].truncated);
  // No classification head: not a reranker.
  const std::vector<std::string> docs = {"a"};
  EXPECT_EQ(embedder->rerank("q", docs, 0, false, pool).status().code(), ErrorCode::kUnsupported);
}

TEST(Embedder, RefusesDecoders) {
  testing::TempDir dir;
  SynthOptions o;
  o.arch = "llama";
  ASSERT_TRUE(synthesize_model(o, dir.file("llama.gguf")).ok());
  auto file = open_model_file(dir.file("llama.gguf"));
  ASSERT_TRUE(file.ok());
  const auto e = Embedder::open(std::move(file).value());
  EXPECT_EQ(e.status().code(), ErrorCode::kUnsupported);
}

TEST(Rerank, ScoresAreTheHeadOnTheClsVectorOfThePair) {
  SynthOptions o;
  o.classifier_labels = 1;
  const auto f = make_model(o);
  ASSERT_TRUE(f->model->classifier().has_value());
  EXPECT_EQ(f->model->hparams().pooling, PoolingType::kRank);
  const ReferenceBert ref(*f->file, f->model->hparams());
  auto embedder = open_embedder(f->path);
  ASSERT_TRUE(embedder->can_rerank());
  ThreadPool pool(2);
  const std::string query = "the cat";
  const std::vector<std::string> docs = {"a cat sat on the mat", "the dog", "hat and bat",
                                         "the cat the cat", "on"};
  const auto r = embedder->rerank(query, docs, 0, false, pool);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->items.size(), docs.size());
  const tokenizer::SpecialTokens& vocab = embedder->tokenizer().vocab().special();
  std::vector<double> expected;
  for (const std::string& doc : docs) {
    std::vector<int32_t> ids = {vocab.cls};
    for (const int32_t id : embedder->tokenizer().encode(query, {.add_special = false}))
      ids.push_back(id);
    ids.push_back(vocab.sep);
    std::vector<int32_t> types(ids.size(), 0);
    for (const int32_t id : embedder->tokenizer().encode(doc, {.add_special = false}))
      ids.push_back(id);
    ids.push_back(vocab.sep);
    types.resize(ids.size(), 1);
    expected.push_back(ref.score(ref.forward(ids, types)));
  }
  for (size_t i = 0; i < r->items.size(); ++i) {
    const RerankItem& item = r->items[i];
    EXPECT_NEAR(item.score, expected[item.index], kF32VersusF64) << "document " << item.index;
    if (i > 0) {
      EXPECT_GE(r->items[i - 1].score, item.score);
    }
  }
  const auto top = embedder->rerank(query, docs, 2, false, pool);
  ASSERT_TRUE(top.ok());
  ASSERT_EQ(top->items.size(), 2u);
  EXPECT_EQ(top->items[0].index, r->items[0].index);
  EXPECT_EQ(top->items[1].index, r->items[1].index);
}

// Issue 22: NaN weights must not come back as vectors of nulls or NaN scores (which also break
// the rerank sort): numeric_fault, as generation answers.
TEST(Embedder, NanWeightsAreANumericFault) {
  SynthOptions o;
  o.classifier_labels = 1;
  const auto f = make_model(o);
  testing::poison_tensor_with_nan(f->path, "token_embd_norm.weight");
  auto embedder = open_embedder(f->path);
  ThreadPool pool(2);
  const std::vector<std::string> texts = {"the cat sat", "a"};
  for (const PoolingType pooling : {PoolingType::kMean, PoolingType::kCls, PoolingType::kNone}) {
    const auto r = embedder->embed(texts, {.pooling = pooling}, pool);
    EXPECT_EQ(r.status().code(), ErrorCode::kNumericFault) << pooling_type_name(pooling);
  }
  const std::vector<std::vector<int32_t>> tokens = {{1, 2, 3}};
  const auto ids = embedder->embed_tokens(tokens, {}, pool);
  EXPECT_EQ(ids.status().code(), ErrorCode::kNumericFault);
  const auto r = embedder->rerank("the cat", texts, 0, false, pool);
  EXPECT_EQ(r.status().code(), ErrorCode::kNumericFault);
}

}  // namespace
}  // namespace synapse
