// SPDX-License-Identifier: Apache-2.0
// BERT through the Model IR against a straightforward float64 BERT written here from the
// definition (token + type + position embeddings, LayerNorm, post-norm blocks, bidirectional
// softmax attention, tanh GELU, pooling, the tanh classification head), on synthetic models from
// `synth`: every ISA table and thread count, batching invariance, the Embedder's errors, and
// the Engine's rules for a bidirectional model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu_backend.h"
#include "encoder/embedder.h"
#include "encoder/embedding_runtime.h"
#include "encoder/pooling.h"
#include "format/model_file.h"
#include "kernels/gelu_table.h"
#include "kernels/kernel_selection.h"
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
  std::unique_ptr<ModelFile> file;  // for the reference's weights
  HParams hp;
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
  auto hp = read_model_hparams(f->file->metadata());
  EXPECT_TRUE(hp.ok()) << hp.status().to_string();
  f->hp = *hp;
  return f;
}

// Deterministic token sequences of the given lengths, ids in range.
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

// The model on one kernel table and thread count, with an Engine (as the service runs it).
struct Loaded {
  Loaded(const KernelTable& kernels, int threads, const std::string& path,
         const DecoderOptions& options = {})
      : pool(threads), backend(kernels, pool) {
    auto m = DecoderModel::open(path, backend, options);
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    model = std::move(m).value();
    engine = std::make_unique<Engine>(*model);
  }
  ThreadPool pool;
  CpuBackend backend;
  std::unique_ptr<DecoderModel> model;
  std::unique_ptr<Engine> engine;
};

// Every row's hidden state of each sequence, all sequences in one step.
std::vector<std::vector<float>> hidden_states(Engine& engine,
                                              const std::vector<std::vector<int32_t>>& seqs,
                                              const std::vector<std::vector<int32_t>>& types) {
  std::vector<StepInput> inputs;
  for (size_t s = 0; s < seqs.size(); ++s) {
    inputs.push_back(StepInput{.sequence = engine.new_sequence(),
                               .tokens = seqs[s],
                               .logits = LogitsWanted::kNone,
                               .hidden = LogitsWanted::kAll,
                               .token_types = types.empty() ? std::span<const int32_t>()
                                                            : std::span<const int32_t>(types[s])});
  }
  StepOutput out;
  const Status st = engine.step(inputs, out);
  EXPECT_TRUE(st.ok()) << st.to_string();
  std::vector<std::vector<float>> result;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const auto rows = out.hidden_rows(s);
    result.emplace_back(rows.begin(), rows.end());
    EXPECT_TRUE(engine.release(inputs[s].sequence).ok());
  }
  return result;
}

TEST(EncoderIr, MatchesFloat64ReferenceOnEveryIsaWithBatchedSequences) {
  const auto f = make_model({});
  const ReferenceBert ref(*f->file, f->hp);
  const auto seqs = sequences({1, 7, 19, 3, 40}, f->hp.n_vocab);
  std::vector<std::vector<int32_t>> types;
  std::vector<Vec> expected;
  for (size_t s = 0; s < seqs.size(); ++s) {
    types.emplace_back(seqs[s].size(), static_cast<int32_t>(s % 2));
    expected.push_back(ref.forward(seqs[s], types.back()));
  }
  for (const KernelTable* kernels : runnable_kernel_tables()) {
    for (const int threads : {1, 3}) {
      Loaded m(*kernels, threads, f->path, {.matmul_mode = {.path = DotPath::kF32}});
      EXPECT_TRUE(m.model->bidirectional());
      EXPECT_EQ(m.model->n_logits(), 0u);  // an embedding model: no output head
      const auto got = hidden_states(*m.engine, seqs, types);
      for (size_t s = 0; s < seqs.size(); ++s) {
        EXPECT_LT(max_abs_diff(got[s], expected[s]), kF32VersusF64)
            << kernels->variant << " threads " << threads << " sequence " << s;
      }
    }
  }
}

TEST(EncoderIr, BatchingDoesNotChangeResults) {
  const auto f = make_model({});
  const auto seqs =
      sequences({5, 33, 12, 2, 17, 9, 21, 4, 30, 11, 6, 8, 14, 3, 25, 19, 7}, f->hp.n_vocab);
  Loaded m(selected_kernels(), 2, f->path);
  const auto together = hidden_states(*m.engine, seqs, {});
  for (size_t s = 0; s < seqs.size(); ++s) {
    const auto alone = hidden_states(*m.engine, {seqs[s]}, {});
    // Alone and batched differ at most in the order the matrix kernels sum.
    double worst = 0.0;
    for (size_t i = 0; i < alone[0].size(); ++i) {
      worst = std::max(worst, static_cast<double>(std::abs(alone[0][i] - together[s][i])));
    }
    EXPECT_LT(worst, kF32VersusF64) << "sequence " << s;
  }
}

TEST(EncoderIr, RunsEachSequenceWholeAndChecksItsInputs) {
  SynthOptions o;
  o.n_ctx = 16;
  const auto f = make_model(o);
  Loaded m(selected_kernels(), 1, f->path);
  Engine& engine = *m.engine;
  StepOutput out;
  // Longer than the context; an id outside the vocabulary; a token type outside 0..1.
  const std::vector<int32_t> long_seq(17, 1), bad_id = {1, 100000}, ok_ids = {1, 2};
  const std::vector<int32_t> bad_types = {0, 2};
  const SeqId seq = engine.new_sequence();
  const StepInput too_long{.sequence = seq, .tokens = long_seq, .hidden = LogitsWanted::kAll};
  EXPECT_EQ(engine.step({&too_long, 1}, out).code(), ErrorCode::kLimitExceeded);
  const StepInput bad{.sequence = seq, .tokens = bad_id, .hidden = LogitsWanted::kAll};
  EXPECT_EQ(engine.step({&bad, 1}, out).code(), ErrorCode::kInvalidArgument);
  const StepInput typed{.sequence = seq,
                        .tokens = ok_ids,
                        .logits = LogitsWanted::kNone,
                        .hidden = LogitsWanted::kAll,
                        .token_types = bad_types};
  EXPECT_EQ(engine.step({&typed, 1}, out).code(), ErrorCode::kInvalidArgument);
  // No output head: logits are refused.
  const StepInput logits{.sequence = seq, .tokens = ok_ids, .logits = LogitsWanted::kLast};
  EXPECT_EQ(engine.step({&logits, 1}, out).code(), ErrorCode::kUnsupported);
  // A sequence runs whole: appending to one that holds tokens is refused (its earlier rows
  // would not have seen the new ones).
  const StepInput first{.sequence = seq, .tokens = ok_ids, .logits = LogitsWanted::kNone};
  ASSERT_TRUE(engine.step({&first, 1}, out).ok());
  EXPECT_EQ(engine.step({&first, 1}, out).code(), ErrorCode::kInvalidArgument);
}

TEST(EncoderIr, AttentionSeesLaterTokens) {
  // The first row's hidden state changes with the last token: attention is not causal.
  const auto f = make_model({});
  Loaded m(selected_kernels(), 1, f->path);
  std::vector<int32_t> a = {3, 4, 5, 6}, b = a;
  b.back() = 7;
  const auto ha = hidden_states(*m.engine, {a}, {});
  const auto hb = hidden_states(*m.engine, {b}, {});
  double diff = 0.0;
  for (size_t i = 0; i < f->hp.n_embd; ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(ha[0][i] - hb[0][i])));
  }
  EXPECT_GT(diff, 1e-3);
}

TEST(EncoderIr, GeluTableIsCloseToTheExactFunction) {
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

std::unique_ptr<EmbeddingRuntime> open_embedder(const std::string& path) {
  auto file = open_model_file(path);
  EXPECT_TRUE(file.ok());
  auto e = EmbeddingRuntime::open(std::move(file).value(), 2, DecoderOptions{});
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return std::move(e).value();
}

TEST(Embedder, PoolingAndNormalization) {
  const auto f = make_model({});
  const ReferenceBert ref(*f->file, f->hp);
  auto runtime = open_embedder(f->path);
  Embedder* embedder = &runtime->embedder();
  const std::vector<std::string> texts = {"the cat sat", "a", "on the mat with a hat and a bat"};
  const size_t d = embedder->n_embd();
  for (const PoolingType pooling :
       {PoolingType::kMean, PoolingType::kCls, PoolingType::kLast, PoolingType::kNone}) {
    for (const bool normalize : {false, true}) {
      auto r = embedder->embed(texts, {.pooling = pooling, .normalize = normalize});
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
  auto runtime = open_embedder(f->path);
  Embedder* embedder = &runtime->embedder();
  std::vector<std::string> texts;
  for (int i = 0; i < 20; ++i)
    texts.push_back(
        std::string(static_cast<size_t>(i % 7 + 1) * 4, 'a' + static_cast<char>(i % 26)) + " the");
  auto big = embedder->embed(texts, {});
  embedder->set_max_batch_tokens(8);
  auto small = embedder->embed(texts, {});
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
  auto runtime = open_embedder(f->path);
  Embedder* embedder = &runtime->embedder();
  EXPECT_EQ(embedder->embed({}, {}).status().code(), ErrorCode::kInvalidArgument);
  const std::vector<std::string> empty = {"ok", ""};
  const auto e = embedder->embed(empty, {});
  EXPECT_EQ(e.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(e.status().where().field, "input[1]");
  const std::vector<std::string> long_text = {"a b c d e f g h i j k l m n o p"};
  const auto too_long = embedder->embed(long_text, {});
  EXPECT_EQ(too_long.status().code(), ErrorCode::kContextLengthExceeded);
  EXPECT_EQ(too_long.status().where().field, "input[0]");
  const auto cut = embedder->embed(long_text, {.pooling = PoolingType::kNone, .truncate = true});
  ASSERT_TRUE(cut.ok()) << cut.status().to_string();
  EXPECT_EQ(cut->items[0].n_tokens, 8u);
  EXPECT_TRUE(cut->items[0].truncated);
  // No classification head: not a reranker.
  const std::vector<std::string> docs = {"a"};
  EXPECT_EQ(embedder->rerank("q", docs, 0, false).status().code(), ErrorCode::kUnsupported);
}

TEST(Rerank, ScoresAreTheHeadOnTheClsVectorOfThePair) {
  SynthOptions o;
  o.classifier_labels = 1;
  const auto f = make_model(o);
  EXPECT_EQ(f->hp.pooling, PoolingType::kRank);
  const ReferenceBert ref(*f->file, f->hp);
  auto runtime = open_embedder(f->path);
  Embedder* embedder = &runtime->embedder();
  ASSERT_TRUE(embedder->can_rerank());
  const std::string query = "the cat";
  const std::vector<std::string> docs = {"a cat sat on the mat", "the dog", "hat and bat",
                                         "the cat the cat", "on"};
  const auto r = embedder->rerank(query, docs, 0, false);
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
  const auto top = embedder->rerank(query, docs, 2, false);
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
  auto runtime = open_embedder(f->path);
  Embedder* embedder = &runtime->embedder();
  const std::vector<std::string> texts = {"the cat sat", "a"};
  for (const PoolingType pooling : {PoolingType::kMean, PoolingType::kCls, PoolingType::kNone}) {
    const auto r = embedder->embed(texts, {.pooling = pooling});
    EXPECT_EQ(r.status().code(), ErrorCode::kNumericFault) << pooling_type_name(pooling);
  }
  const std::vector<std::vector<int32_t>> tokens = {{1, 2, 3}};
  const auto ids = embedder->embed_tokens(tokens, {});
  EXPECT_EQ(ids.status().code(), ErrorCode::kNumericFault);
  const auto r = embedder->rerank("the cat", texts, 0, false);
  EXPECT_EQ(r.status().code(), ErrorCode::kNumericFault);
}

}  // namespace
}  // namespace synapse
