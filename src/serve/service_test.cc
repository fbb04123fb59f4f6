// SPDX-License-Identifier: Apache-2.0
// The service over a small synthetic model: batching and prefix reuse do not change greedy
// output, cancellation frees pages within one step, bounded admission, class ordering counted in
// engine steps (never wall time), deadlines on a fake clock, stop strings and end-of-generation
// tokens, log-probabilities, validation, speculative decoding, and shutdown with requests in
// flight. One file of ~950 lines on purpose: every test here runs on the ServiceTest fixture
// (its per-suite synthetic model, prompts, collectors and the expect_* checks that the
// architecture and KV-cache suites below instantiate); splitting it would move the fixture into
// a header only to share it between two files.
#include "serve/service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "backend/cpu_backend.h"
#include "constrain/json_schema.h"
#include "constrain/matcher.h"
#include "kernels/kernel_selection.h"
#include "kernels/matmul.h"
#include "runtime/engine.h"
#include "serve/service_test_support.h"
#include "synth/synth_model.h"
#include "synth/synthetic_vocab.h"
#include "tests/support/test_support.h"

namespace synapse::serve {
namespace {

using namespace std::chrono_literals;

struct Collected {
  std::string text;
  std::vector<int32_t> tokens;
  std::vector<GenerationEvent> events;
  GenerationEvent final_event;
};

Collected collect(RequestHandle& handle) {
  Collected c;
  GenerationEvent e;
  while (handle.next(e)) {
    c.text += e.text;
    for (const GeneratedToken& t : e.tokens) c.tokens.push_back(t.token);
    if (e.final) c.final_event = e;
    c.events.push_back(std::move(e));
  }
  return c;
}

class ServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { make_model("qwen2"); }
  // The suite's model: a small synthetic one of `arch` with Q8_0 matrices, run with a KV cache
  // of `kv_type` (Q8_0 and Q4_0 need heads of 32 values: then 2 heads of 32, else 4 of 16).
  static void make_model(const char* arch, TensorType kv_type = TensorType::kF32) {
    dir_ = new testing::TempDir();
    kv_type_ = kv_type;
    path_ = new std::string(dir_->file("serve.gguf"));
    ASSERT_TRUE(synthesize_model(model_options(arch, kv_type), *path_).ok());
  }
  static SynthOptions model_options(const char* arch, TensorType kv_type) {
    const bool block_cache = kv_type == TensorType::kQ8_0 || kv_type == TensorType::kQ4_0;
    SynthOptions o;
    o.arch = arch;
    o.n_embd = 64;
    o.n_ff = 128;
    o.n_layer = 2;
    o.n_head = block_cache ? 2 : 4;
    o.n_head_kv = block_cache ? 1 : 2;
    o.n_ctx = 512;
    o.type_attention = TensorType::kQ8_0;
    o.type_feed_forward = TensorType::kQ8_0;
    return o;
  }
  static void TearDownTestSuite() {
    delete path_;
    delete dir_;
  }

  void SetUp() override {
    pool_ = std::make_unique<ThreadPool>(2);
    backend_ = std::make_unique<CpuBackend>(selected_kernels(), *pool_);
    // The serving options: one matmul route for every step, so batching changes no bit.
    DecoderOptions options = serving_decoder_options();
    options.kv_type = kv_type_;
    auto model = DecoderModel::open(*path_, *backend_, options);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    model_ = std::move(*model);
    ASSERT_EQ(model_->ir().kv_type, kv_type_);
    auto tok = tokenizer::Tokenizer::from_gguf(model_->file().metadata());
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    tokenizer_ = std::make_unique<tokenizer::Tokenizer>(std::move(*tok));
  }

  std::unique_ptr<Service> make(size_t parallel, size_t cached = 0) {
    return std::make_unique<Service>(*model_, *tokenizer_, small_service_config(parallel, cached));
  }

  // Prompt i: a slice of the synthetic corpus, of a length that varies with i.
  std::vector<int32_t> prompt(size_t i) const {
    const std::string_view corpus = synthetic_corpus();
    const std::string text(corpus.substr(i * 37 % 200, 20 + i * 23 % 90));
    return tokenizer_->encode(text, {.add_special = false});
  }

  static GenerationRequest greedy(std::vector<int32_t> prompt, int32_t max_tokens,
                                  RequestClass c = RequestClass::kInteractive) {
    return greedy_request(std::move(prompt), max_tokens, c);
  }

  std::shared_ptr<RequestHandle> submit(Service& s, GenerationRequest r) {
    auto h = s.submit(std::move(r));
    EXPECT_TRUE(h.ok()) << h.status().to_string();
    return h.ok() ? *h : nullptr;
  }

  // A masker for the JSON Schema `schema_json` over this model's vocabulary; `grammar` gets
  // its grammar (to check texts against).
  std::shared_ptr<constrain::TokenMasker> schema_masker(
      const char* schema_json, std::shared_ptr<const constrain::Grammar>& grammar) {
    auto compiled = constrain::compile_json_schema(nlohmann::ordered_json::parse(schema_json));
    EXPECT_TRUE(compiled.ok()) << compiled.status().to_string();
    if (!compiled.ok()) return nullptr;
    grammar = std::make_shared<const constrain::Grammar>(std::move(compiled).value());
    return std::make_shared<constrain::TokenMasker>(
        grammar, std::make_shared<const constrain::TokenTrie>(
                     constrain::TokenTrie::from_tokenizer(*tokenizer_, {})));
  }

  // Submits every request at once, each from its own client thread, and collects each.
  static std::vector<Collected> submit_all(Service& service,
                                           const std::vector<GenerationRequest>& requests) {
    std::vector<Collected> got(requests.size());
    std::vector<std::thread> clients;
    for (size_t i = 0; i < requests.size(); ++i) {
      clients.emplace_back([&, i] {
        auto h = service.submit(requests[i]);
        ASSERT_TRUE(h.ok()) << h.status().to_string();
        got[i] = collect(**h);
      });
    }
    for (std::thread& t : clients) t.join();
    return got;
  }

  // Output of `r` on a fresh service with one slot and no prefix cache.
  Collected alone(const GenerationRequest& r) {
    auto s = make(1);
    auto h = submit(*s, r);
    return collect(*h);
  }

  // The checks every architecture's suite runs (defined below).
  void expect_batch_invariant();
  void expect_eight_concurrent_equal_alone();
  void expect_cancel_frees_pages();
  void expect_prefix_reuse_gives_identical_output();

  static testing::TempDir* dir_;
  static std::string* path_;
  static TensorType kv_type_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<CpuBackend> backend_;
  std::unique_ptr<DecoderModel> model_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
};

testing::TempDir* ServiceTest::dir_ = nullptr;
std::string* ServiceTest::path_ = nullptr;
TensorType ServiceTest::kv_type_ = TensorType::kF32;

// The property batching rests on: a sequence's logits do not depend on what else is in the step
// (a decode row alone, or beside a prefill long enough for the tiled matrix route).
bool decode_row_equal_alone_and_beside_prefill(DecoderModel& model, std::span<const int32_t> a,
                                               std::span<const int32_t> b) {
  EngineConfig config;
  config.kv.page_tokens = 8;
  Engine engine(model, config);
  StepOutput out;
  const SeqId sa = engine.new_sequence();
  const StepInput prefill{sa, a, LogitsWanted::kNone};
  EXPECT_TRUE(engine.step(std::span(&prefill, 1), out).ok());
  const SeqId fork = *engine.fork(sa);
  const int32_t next = 42;
  const StepInput lone{sa, std::span(&next, 1), LogitsWanted::kLast};
  EXPECT_TRUE(engine.step(std::span(&lone, 1), out).ok());
  const std::vector<float> alone(out.last(0).begin(), out.last(0).end());
  const SeqId sb = engine.new_sequence();
  const std::vector<StepInput> mixed = {{sb, b, LogitsWanted::kNone},
                                        {fork, std::span(&next, 1), LogitsWanted::kLast}};
  EXPECT_TRUE(engine.step(mixed, out).ok());
  return std::equal(alone.begin(), alone.end(), out.last(1).begin());
}

void ServiceTest::expect_batch_invariant() {
  EXPECT_TRUE(batch_invariant(*model_));
  const std::vector<int32_t> a = prompt(1), b = prompt(2);
  ASSERT_GE(b.size() + 1, kMatmulMinColumns);
  EXPECT_TRUE(decode_row_equal_alone_and_beside_prefill(*model_, a, b));
}

// With the default MatmulRoute::kAuto the route is chosen from the step's total row count (tiled
// from kMatmulMinColumns rows on). For the suite's Q8_0 matrices every kernel level gives the
// tiles the decode kernels' bits (scalar: no tiles; AVX2, with or without AVX-VNNI, and AVX-512
// without VNNI: Q8_0 interleaved eight rows to a vector; AVX-512 VNNI: sixteen; one kernel on
// every route), so a decode row's logits
// do not change when a prefill shares its step, even off the serving options. (Tiles that still
// round differently -- VNNI's tiles of the quantized types read as stored, AVX-512's packed float
// tile on matrices it does not interleave -- are listed in src/kernels/README.md; the service
// opens models with serving_decoder_options(), which never runs them.)
TEST_F(ServiceTest, AutoRouteLogitsIndependentOfTheBatch) {
  auto model = DecoderModel::open(*path_, *backend_);
  ASSERT_TRUE(model.ok());
  EXPECT_FALSE(batch_invariant(**model));
  const std::vector<int32_t> a = prompt(1), b = prompt(2);
  EXPECT_TRUE(decode_row_equal_alone_and_beside_prefill(**model, a, b))
      << "a decode row's logits change when a prefill shares its step";
}

void ServiceTest::expect_eight_concurrent_equal_alone() {
  constexpr size_t kN = 8;
  std::vector<GenerationRequest> requests;
  std::vector<Collected> expected;
  for (size_t i = 0; i < kN; ++i) {
    requests.push_back(greedy(prompt(i), 20 + static_cast<int32_t>(i)));
    expected.push_back(alone(requests.back()));
    ASSERT_EQ(expected.back().final_event.finish_reason, FinishReason::kLength);
  }
  auto service = make(kN, 4);
  const std::vector<Collected> got = submit_all(*service, requests);
  size_t max_batch = 0;
  for (size_t i = 0; i < kN; ++i) {
    EXPECT_EQ(got[i].tokens, expected[i].tokens) << "request " << i;
    EXPECT_EQ(got[i].text, expected[i].text) << "request " << i;
    EXPECT_EQ(got[i].final_event.usage.completion_tokens, requests[i].max_tokens);
    max_batch = std::max(max_batch, got[i].events.size());
  }
  EXPECT_NE(service->render_prometheus().find("synapse_generated_tokens_total"), std::string::npos);
}

// A constrained request's text is a sentence of its grammar, ended by end of generation where
// the grammar is complete; eight constrained greedy streams sharing one grammar (their masks
// computed during the forward pass) equal each alone, and batch with unconstrained ones.
TEST_F(ServiceTest, ConstrainedRequestsFollowTheirGrammarAndBatchLikeOthers) {
  std::shared_ptr<const constrain::Grammar> shared;
  const auto masker = schema_masker(R"({"type": "object",
      "properties": {"word": {"type": "string", "maxLength": 6}, "n": {"enum": [1, 22, 333]}},
      "required": ["word", "n"], "additionalProperties": false})",
                                    shared);
  ASSERT_TRUE(masker);
  constexpr size_t kN = 8;
  std::vector<GenerationRequest> requests;
  std::vector<Collected> expected;
  for (size_t i = 0; i < kN; ++i) {
    GenerationRequest r = greedy(prompt(i), 64);
    if (i % 4 != 3) r.constraint = masker;  // every fourth stays unconstrained
    requests.push_back(r);
    expected.push_back(alone(requests.back()));
    if (r.constraint) {
      EXPECT_EQ(expected.back().final_event.finish_reason, FinishReason::kStop)
          << i << " " << expected.back().final_event.error.to_string() << " "
          << expected.back().text;
      EXPECT_TRUE(constrain::grammar_accepts(shared, expected.back().text))
          << "request " << i << ": " << expected.back().text;
    }
  }
  auto service = make(kN);
  const std::vector<Collected> got = submit_all(*service, requests);
  for (size_t i = 0; i < kN; ++i) {
    EXPECT_EQ(got[i].tokens, expected[i].tokens) << "request " << i;
    EXPECT_EQ(got[i].text, expected[i].text) << "request " << i;
  }
}

// Speculative decoding by prompt lookup changes speed, not output: concurrent greedy requests
// (prompts that repeat themselves, some constrained by a schema, one asking for logprobs, one
// opting out) give the tokens, text and logprobs each gives alone without drafts, in fewer steps;
// the drafts verified and taken are counted per request and in /metrics, none for the opt-out.
TEST_F(ServiceTest, PromptLookupChangesNoOutputInFewerSteps) {
  std::shared_ptr<const constrain::Grammar> shared;
  const auto masker = schema_masker(R"({"type": "array", "items": {"enum": ["ab", "cd"]},
      "maxItems": 12})",
                                    shared);
  ASSERT_TRUE(masker);
  constexpr size_t kN = 6;
  std::vector<GenerationRequest> requests;
  std::vector<Collected> expected;
  uint64_t plain_steps = 0;
  for (size_t i = 0; i < kN; ++i) {
    std::vector<int32_t> p = prompt(i);
    const std::vector<int32_t> once = p;
    p.insert(p.end(), once.begin(), once.end());  // text that repeats: lookup finds drafts
    GenerationRequest r = greedy(p, 40);
    if (i == 2) r.constraint = masker;
    if (i == 3) {
      r.logprobs = true;
      r.top_logprobs = 2;
    }
    if (i == 4) r.speculative = false;
    requests.push_back(r);
    auto plain = make(1);
    expected.push_back(collect(*submit(*plain, r)));
    plain_steps += plain->stats().steps;
  }
  ServiceConfig config = small_service_config(kN);
  config.draft_max = 6;
  config.draft_max_batch = kN;  // every step speculates, however many requests decode
  auto service = std::make_unique<Service>(*model_, *tokenizer_, config);
  const std::vector<Collected> got = submit_all(*service, requests);
  size_t drafted = 0, accepted = 0;
  for (size_t i = 0; i < kN; ++i) {
    EXPECT_EQ(got[i].tokens, expected[i].tokens) << "request " << i;
    EXPECT_EQ(got[i].text, expected[i].text) << "request " << i;
    EXPECT_EQ(got[i].final_event.finish_reason, expected[i].final_event.finish_reason) << i;
    const Timings& t = got[i].final_event.timings;
    EXPECT_LE(t.draft_tokens_accepted, t.draft_tokens);
    drafted += t.draft_tokens;
    accepted += t.draft_tokens_accepted;
    if (i == 4) {
      EXPECT_EQ(t.draft_tokens, 0u) << "the request opted out";
    }
  }
  for (size_t e = 0; e < got[3].events.size(); ++e) {
    for (size_t k = 0; k < got[3].events[e].tokens.size(); ++k) {
      ASSERT_TRUE(got[3].events[e].tokens[k].logprobs.has_value());
    }
  }
  const auto logprobs_of = [](const Collected& c) {
    std::vector<float> v;
    for (const GenerationEvent& e : c.events) {
      for (const GeneratedToken& t : e.tokens) v.push_back(t.logprobs->chosen.logprob);
    }
    return v;
  };
  EXPECT_EQ(logprobs_of(got[3]), logprobs_of(expected[3]));
  EXPECT_TRUE(constrain::grammar_accepts(shared, got[2].text)) << got[2].text;
  EXPECT_GT(accepted, 0u);
  // Alone, each request took a step per token; together and with drafts the steps are fewer
  // than one request's tokens would need.
  EXPECT_LT(service->stats().steps, plain_steps);
  const std::string metrics = service->render_prometheus();
  EXPECT_NE(metrics.find("synapse_speculative_draft_tokens_total " + std::to_string(drafted)),
            std::string::npos)
      << metrics;
  EXPECT_NE(
      metrics.find("synapse_speculative_draft_tokens_accepted_total " + std::to_string(accepted)),
      std::string::npos);
}

// A draft model changes no output either: with the model drafting for itself every draft is
// taken; with a one-layer draft (the same synthetic weights, one block of two) some are not, and
// the rejected ones leave no trace in the requests' KV or text.
TEST_F(ServiceTest, DraftModelChangesNoOutput) {
  SynthOptions o = model_options("qwen2", kv_type_);
  o.n_layer = 1;
  testing::TempDir dir;
  ASSERT_TRUE(synthesize_model(o, dir.file("draft.gguf")).ok());
  auto one_layer = DecoderModel::open(dir.file("draft.gguf"), *backend_, serving_decoder_options());
  ASSERT_TRUE(one_layer.ok()) << one_layer.status().to_string();
  constexpr size_t kN = 4;
  std::vector<GenerationRequest> requests;
  std::vector<Collected> expected;
  for (size_t i = 0; i < kN; ++i) {
    requests.push_back(greedy(prompt(i), 24));
    expected.push_back(alone(requests.back()));
  }
  for (DecoderModel* draft : {model_.get(), one_layer->get()}) {
    SCOPED_TRACE(draft == model_.get() ? "self-drafting" : "one-layer draft");
    ServiceConfig config = small_service_config(kN);
    config.draft_max = 4;
    config.draft_max_batch = kN;
    config.draft_model = draft;
    auto service = std::make_unique<Service>(*model_, *tokenizer_, config);
    const std::vector<Collected> got = submit_all(*service, requests);
    size_t drafted = 0, accepted = 0;
    for (size_t i = 0; i < kN; ++i) {
      EXPECT_EQ(got[i].tokens, expected[i].tokens) << "request " << i;
      EXPECT_EQ(got[i].text, expected[i].text) << "request " << i;
      drafted += got[i].final_event.timings.draft_tokens;
      accepted += got[i].final_event.timings.draft_tokens_accepted;
    }
    EXPECT_GT(drafted, 0u);
    if (draft == model_.get()) {
      EXPECT_EQ(accepted, drafted);
    }
  }
}

// At the end of the context a speculating request stops where plain decoding does: the same
// tokens and finish reason, whether its last tokens were accepted drafts or not.
TEST_F(ServiceTest, SpeculationStopsAtTheEndOfTheContextLikePlainDecoding) {
  std::vector<int32_t> long_prompt;
  while (long_prompt.size() + 20 < model_->n_ctx()) {
    const std::vector<int32_t> p = prompt(long_prompt.size() % 5);
    long_prompt.insert(long_prompt.end(), p.begin(), p.end());
  }
  long_prompt.resize(model_->n_ctx() - 20);
  const GenerationRequest r = greedy(long_prompt, 64);
  const Collected expected = alone(r);
  ASSERT_EQ(expected.final_event.finish_reason, FinishReason::kLength);
  ASSERT_LT(expected.tokens.size(), 64u) << "the context, not max_tokens, ends it";
  for (DecoderModel* draft : {static_cast<DecoderModel*>(nullptr), model_.get()}) {
    SCOPED_TRACE(draft ? "self-drafting" : "prompt lookup");
    ServiceConfig config = small_service_config(1);
    config.draft_max = 6;
    config.draft_model = draft;
    auto service = std::make_unique<Service>(*model_, *tokenizer_, config);
    const Collected got = collect(*submit(*service, r));
    EXPECT_EQ(got.tokens, expected.tokens);
    EXPECT_EQ(got.final_event.finish_reason, expected.final_event.finish_reason);
    EXPECT_GT(got.final_event.timings.draft_tokens_accepted, 0u);
  }
}

// Keys of an object in definition order are forced: fast-forward emits them without sampling
// and feeds them in one step. The output must be the one sampling each token gives (greedy,
// batched with others or alone), in fewer steps.
TEST_F(ServiceTest, ForcedTokensAreFedTogetherAndChangeNoOutput) {
  std::shared_ptr<const constrain::Grammar> shared;
  const auto masker = schema_masker(R"({"type": "object",
      "properties": {"temperature_in_celsius": {"enum": [1, 22, 333]},
                     "description_of_the_weather": {"type": "string", "maxLength": 5},
                     "was_it_raining_yesterday": {"type": "boolean"}},
      "required": ["temperature_in_celsius", "description_of_the_weather",
                   "was_it_raining_yesterday"], "additionalProperties": false})",
                                    shared);
  ASSERT_TRUE(masker);
  const auto request = [&](size_t i) {
    GenerationRequest r = greedy(prompt(i), 200);
    r.constraint = masker;
    return r;
  };
  // The requests on a fresh service with a slot each; `steps` gets its engine steps.
  const auto run = [&](bool fast_forward, const std::vector<GenerationRequest>& requests,
                       uint64_t& steps) {
    ServiceConfig config = small_service_config(requests.size(), 0);
    config.fast_forward = fast_forward;
    Service service(*model_, *tokenizer_, config);
    std::vector<Collected> got = submit_all(service, requests);
    steps = service.stats().steps;
    return got;
  };
  uint64_t sampled_steps = 0, forced_steps = 0, steps = 0;
  const Collected sampled = run(false, {request(0)}, sampled_steps)[0];
  const Collected forced = run(true, {request(0)}, forced_steps)[0];
  ASSERT_EQ(sampled.final_event.finish_reason, FinishReason::kStop)
      << sampled.final_event.error.to_string();
  EXPECT_TRUE(constrain::grammar_accepts(shared, sampled.text)) << sampled.text;
  EXPECT_EQ(forced.tokens, sampled.tokens);
  EXPECT_EQ(forced.text, sampled.text);
  // The three keys (and the punctuation around them) are several tokens each.
  EXPECT_LE(forced_steps + 8, sampled_steps) << forced.text;
  const std::vector<Collected> batched =
      run(true, {request(0), request(1), request(2), request(3)}, steps);
  for (size_t i = 0; i < batched.size(); ++i) {
    EXPECT_EQ(batched[i].tokens, run(false, {request(i)}, steps)[0].tokens) << "request " << i;
  }
}

void ServiceTest::expect_cancel_frees_pages() {
  auto service = make(2);
  auto other = submit(*service, greedy(prompt(3), 30));
  auto h = submit(*service, greedy(prompt(4), 400));
  GenerationEvent e;
  ASSERT_TRUE(h->next(e));
  ASSERT_FALSE(e.final);
  const uint64_t step_at_cancel = service->stats().steps;
  h->cancel();
  Collected rest = collect(*h);
  EXPECT_EQ(rest.final_event.finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(rest.final_event.error.code(), ErrorCode::kCancelled);
  EXPECT_LE(rest.final_event.step, step_at_cancel + 1);
  EXPECT_LT(rest.final_event.usage.completion_tokens, 400u);
  // The other request is unaffected and, when it is done, no page is held (cache off).
  Collected o = collect(*other);
  EXPECT_EQ(o.final_event.finish_reason, FinishReason::kLength);
  EXPECT_EQ(o.tokens, alone(greedy(prompt(3), 30)).tokens);
  EXPECT_EQ(service->stats().kv_pages_in_use, 0u);
}

TEST_F(ServiceTest, FullQueueRefusesWithQueueFull) {
  ServiceConfig config;
  config.scheduler.max_active = 1;
  config.scheduler.max_queued = {2, 2, 2};
  auto service = std::make_unique<Service>(*model_, *tokenizer_, config);
  auto running = submit(*service, greedy(prompt(0), 400));
  GenerationEvent e;
  ASSERT_TRUE(running->next(e));  // it holds the only slot now
  auto q1 = submit(*service, greedy(prompt(1), 4));
  auto q2 = submit(*service, greedy(prompt(2), 4));
  auto refused = service->submit(greedy(prompt(3), 4));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kQueueFull);
  EXPECT_EQ(error_code_info(refused.status().code()).http_status, 429);
  EXPECT_GE(service->retry_after_s(RequestClass::kInteractive), 1u);
  EXPECT_LE(service->retry_after_s(RequestClass::kInteractive), 60u);
  // Another class has its own queue.
  auto other_class = submit(*service, greedy(prompt(3), 4, RequestClass::kBatch));
  EXPECT_NE(service->render_prometheus().find(
                "synapse_requests_total{class=\"interactive\",status=\"queue_full\"} 1"),
            std::string::npos);
  running->cancel();
  EXPECT_EQ(collect(*q1).final_event.finish_reason, FinishReason::kLength);
  EXPECT_EQ(collect(*q2).final_event.finish_reason, FinishReason::kLength);
  EXPECT_EQ(collect(*other_class).final_event.finish_reason, FinishReason::kLength);
}

TEST_F(ServiceTest, InteractiveTakesTheReservedSlotAheadOfBackground) {
  ServiceConfig config;
  config.scheduler.max_active = 2;
  config.scheduler.reserved_interactive_slots = 1;
  auto service = std::make_unique<Service>(*model_, *tokenizer_, config);
  auto bg1 = submit(*service, greedy(prompt(0), 300, RequestClass::kBackground));
  auto bg2 = submit(*service, greedy(prompt(1), 10, RequestClass::kBackground));
  GenerationEvent e;
  ASSERT_TRUE(bg1->next(e));
  const uint64_t submitted_at = service->stats().steps;
  auto fg = submit(*service, greedy(prompt(2), 8, RequestClass::kInteractive));
  Collected f = collect(*fg);
  // The prompt (< 2 chunks) is prefilled in the next steps: the first token comes at once.
  EXPECT_LE(f.events.front().step, submitted_at + 4);
  Collected b2 = collect(*bg2);
  EXPECT_GT(b2.events.front().step, f.final_event.step)
      << "a background request started before the interactive one finished";
  bg1->cancel();
  collect(*bg1);
}

TEST_F(ServiceTest, BackgroundYieldsAfterItsQuantum) {
  ServiceConfig config;
  config.scheduler.max_active = 1;
  config.scheduler.reserved_interactive_slots = 0;
  config.scheduler.quantum_tokens = 4;
  const GenerationRequest long_bg = greedy(prompt(0), 200, RequestClass::kBackground);
  // The interactive request must reach the loop while the background one still runs; a release
  // build decodes its 200 tokens in ~10 ms, so a descheduled test thread can miss that window.
  // Such an attempt proves nothing either way and is repeated; without preemption every attempt
  // ends with the background request first, and the checks below fail.
  std::unique_ptr<Service> service;
  std::shared_ptr<RequestHandle> bg;
  GenerationEvent e;
  uint64_t arrived_at = 0;
  Collected f, b;
  for (int attempt = 0; attempt < 5; ++attempt) {
    service = std::make_unique<Service>(*model_, *tokenizer_, config);
    bg = submit(*service, long_bg);
    ASSERT_TRUE(bg->next(e));
    auto fg = submit(*service, greedy(prompt(2), 6, RequestClass::kInteractive));
    arrived_at = service->stats().steps;
    f = collect(*fg);
    b = collect(*bg);
    if (arrived_at < b.final_event.step) break;  // arrived while the background one ran
  }
  EXPECT_LT(f.final_event.step, b.final_event.step);
  // Within a quantum plus the prefill steps of its arrival.
  EXPECT_LE(f.events.front().step, arrived_at + 4 + 4);
  // Preemption keeps the KV: the background output is what it is alone.
  b.tokens.insert(b.tokens.begin(), e.tokens.front().token);
  EXPECT_EQ(b.tokens, alone(long_bg).tokens);
  EXPECT_NE(service->render_prometheus().find("synapse_preemptions_total 1"), std::string::npos);
}

// synapse_running_sequences{class=...}: a request counts in its class while it holds a slot, and
// the gauge is back to 0 once it is done.
TEST_F(ServiceTest, RunningSequencesGaugeCountsEachClass) {
  // The gauge's value in `text`, -1 when it is missing.
  const auto running = [](const std::string& text, const char* c) -> long {
    const std::string key = std::string("synapse_running_sequences{class=\"") + c + "\"} ";
    const size_t at = text.find(key);
    return at == std::string::npos ? -1 : std::stol(text.substr(at + key.size()));
  };
  // An attempt in which a request ended by itself before the cancel (a fast build decodes 400
  // tokens in milliseconds) did not show it running for sure, and is repeated; a cancelled one
  // still held its slot when the metrics were read.
  for (int attempt = 0;; ++attempt) {
    ASSERT_LT(attempt, 5) << "every attempt's requests ended before they were cancelled";
    auto service = make(2);  // one slot for the batch request, the reserved one for interactive
    const std::string idle = service->render_prometheus();
    EXPECT_EQ(running(idle, "interactive"), 0) << idle;
    auto batch = submit(*service, greedy(prompt(0), 400, RequestClass::kBatch));
    auto interactive = submit(*service, greedy(prompt(1), 400, RequestClass::kInteractive));
    GenerationEvent e;
    ASSERT_TRUE(batch->next(e));
    ASSERT_TRUE(interactive->next(e));
    const std::string during = service->render_prometheus();
    batch->cancel();
    interactive->cancel();
    const Collected b = collect(*batch);
    const Collected i = collect(*interactive);
    if (b.final_event.finish_reason != FinishReason::kCancelled ||
        i.final_event.finish_reason != FinishReason::kCancelled) {
      continue;
    }
    EXPECT_EQ(running(during, "interactive"), 1) << during;
    EXPECT_EQ(running(during, "batch"), 1) << during;
    EXPECT_EQ(running(during, "background"), 0) << during;
    EXPECT_NE(during.find("synapse_active_sequences 2\n"), std::string::npos) << during;
    // The loop updates the gauges at its next step after the final events.
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    std::string after = service->render_prometheus();
    while ((running(after, "interactive") != 0 || running(after, "batch") != 0) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
      after = service->render_prometheus();
    }
    EXPECT_EQ(running(after, "interactive"), 0) << after;
    EXPECT_EQ(running(after, "batch"), 0) << after;
    EXPECT_EQ(running(after, "background"), 0) << after;
    break;
  }
}

// Two models' services on one gate (as `synapse serve` runs several models): an interactive
// request on one runs ahead of the other's background work, which gets about 1/16 of the steps
// while both have work (the class weights), instead of every other step as without the gate.
TEST_F(ServiceTest, ClassesHoldAcrossModelsSharingTheCores) {
  // Steps long enough (a few ms) that the operating system's time slices do not decide which
  // loop runs: a wider model than the suite's.
  SynthOptions o;
  o.arch = "qwen2";
  o.n_embd = 384;
  o.n_ff = 1536;
  o.n_layer = 4;
  o.n_head = 6;
  o.n_head_kv = 2;
  o.n_ctx = 512;
  o.type_attention = TensorType::kQ8_0;
  o.type_feed_forward = TensorType::kQ8_0;
  const std::string wide = dir_->file("wide.gguf");
  ASSERT_TRUE(synthesize_model(o, wide).ok());
  auto gate = std::make_shared<ComputeGate>();
  ServiceConfig config = small_service_config(2);
  config.compute_gate = gate;
  // Two models, each with its own pool, as `synapse serve` loads them.
  struct Loaded {
    std::unique_ptr<ThreadPool> pool = std::make_unique<ThreadPool>(2);
    std::unique_ptr<CpuBackend> backend = std::make_unique<CpuBackend>(selected_kernels(), *pool);
    std::unique_ptr<DecoderModel> model;
    std::unique_ptr<Service> service;
  };
  std::array<Loaded, 2> loaded;
  for (Loaded& l : loaded) {
    auto model = DecoderModel::open(wide, *l.backend, serving_decoder_options());
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    l.model = std::move(*model);
    l.service = std::make_unique<Service>(*l.model, *tokenizer_, config);
  }
  Service& busy = *loaded[0].service;
  Service& other = *loaded[1].service;

  auto background = submit(busy, greedy(prompt(0), 400, RequestClass::kBackground));
  GenerationEvent e;
  ASSERT_TRUE(background->next(e));
  const GenerationRequest interactive = greedy(prompt(3), 96);
  // Counted from the interactive request's 8th token to its 56th, while both models have work:
  // before it, its loop may still be waking up (the operating system's doing, on a loaded
  // machine); after its end the background model has the cores to itself; a test thread slow to
  // look moves the window's ends within the request, not out of it.
  std::shared_ptr<RequestHandle> answering = submit(other, interactive);
  std::vector<int32_t> answer;
  uint64_t busy_from = 0, other_from = 0, busy_steps = 0, other_steps = 0;
  GenerationEvent event;
  while (answering->next(event)) {
    const size_t before = answer.size();
    for (const GeneratedToken& t : event.tokens) answer.push_back(t.token);
    if (before < 8 && answer.size() >= 8) {
      busy_from = busy.stats().steps;
      other_from = other.stats().steps;
    }
    if (before < 56 && answer.size() >= 56) {
      busy_steps = busy.stats().steps - busy_from;
      other_steps = other.stats().steps - other_from;
    }
    if (event.final) {
      EXPECT_EQ(event.finish_reason, FinishReason::kLength);
    }
  }
  EXPECT_EQ(answer.size(), 96u);
  EXPECT_GE(other_steps, 24u);
  // 16:1 by weight; a quarter leaves room for uneven step costs. Without the gate both loops
  // step side by side: about one to one.
  EXPECT_LE(busy_steps, other_steps / 4 + 2)
      << "the background model ran " << busy_steps << " steps during the interactive model's "
      << other_steps;
  background->cancel();
  const Collected rest = collect(*background);
  EXPECT_EQ(rest.final_event.finish_reason, FinishReason::kCancelled)
      << "the background request ended before the interactive one: nothing was measured";
  EXPECT_NE(other.render_prometheus().find("synapse_compute_wait_seconds_total"),
            std::string::npos);
  // The gate changes when steps run, never what they compute.
  loaded[0].service.reset();
  auto alone_service =
      std::make_unique<Service>(*loaded[0].model, *tokenizer_, small_service_config(1));
  EXPECT_EQ(collect(*submit(*alone_service, interactive)).tokens, answer);
  alone_service.reset();
  loaded[1].service.reset();
}

TEST_F(ServiceTest, DeadlinesOnAFakeClock) {
  std::atomic<int64_t> fake_ms{0};
  ServiceConfig config;
  config.scheduler.max_active = 1;
  const Clock::time_point origin = Clock::now();
  config.clock = [&] { return origin + std::chrono::milliseconds(fake_ms.load()); };
  config.idle_poll = 5ms;
  auto service = std::make_unique<Service>(*model_, *tokenizer_, config);
  GenerationRequest running = greedy(prompt(0), 400);
  running.deadline = origin + 5s;
  auto a = submit(*service, running);
  GenerationEvent e;
  ASSERT_TRUE(a->next(e));
  GenerationRequest queued = greedy(prompt(1), 4);
  queued.deadline = origin + 1s;
  auto b = submit(*service, queued);
  fake_ms = 2000;  // b expires in the queue; a keeps running
  Collected cb = collect(*b);
  EXPECT_EQ(cb.final_event.finish_reason, FinishReason::kError);
  EXPECT_EQ(cb.final_event.error.code(), ErrorCode::kDeadlineExceeded);
  EXPECT_EQ(cb.final_event.usage.completion_tokens, 0u);
  EXPECT_FALSE(a->finished());
  fake_ms = 6000;  // a expires mid-generation
  Collected ca = collect(*a);
  EXPECT_EQ(ca.final_event.error.code(), ErrorCode::kDeadlineExceeded);
  EXPECT_GT(ca.final_event.usage.completion_tokens, 0u);
  EXPECT_EQ(service->stats().kv_pages_in_use, 0u);
}

void ServiceTest::expect_prefix_reuse_gives_identical_output() {
  auto service = make(1, 4);
  const std::vector<int32_t> base = prompt(5);
  ASSERT_GE(base.size(), 12u);
  const GenerationRequest first = greedy(base, 10);
  Collected c1 = collect(*submit(*service, first));
  EXPECT_EQ(c1.final_event.usage.cached_prompt_tokens, 0u);
  EXPECT_EQ(service->stats().cached_sequences, 1u);

  // A prompt sharing all but the last 3 tokens of `base` forks the cached sequence.
  std::vector<int32_t> p2(base.begin(), base.end() - 3);
  for (int32_t t : prompt(6)) p2.push_back(t);
  const GenerationRequest second = greedy(p2, 10);
  Collected c2 = collect(*submit(*service, second));
  EXPECT_EQ(c2.final_event.usage.cached_prompt_tokens, base.size() - 3);
  EXPECT_EQ(c2.tokens, alone(second).tokens);
  EXPECT_EQ(c2.text, alone(second).text);

  // A follow-up turn: the first prompt, its answer, more text. It takes over the sequence.
  std::vector<int32_t> p3 = base;
  p3.insert(p3.end(), c1.tokens.begin(), c1.tokens.end() - 1);  // the last was never fed
  for (int32_t t : prompt(7)) p3.push_back(t);
  const GenerationRequest third = greedy(p3, 10);
  Collected c3 = collect(*submit(*service, third));
  EXPECT_EQ(c3.final_event.usage.cached_prompt_tokens, base.size() + c1.tokens.size() - 1);
  EXPECT_EQ(c3.tokens, alone(third).tokens);
  EXPECT_EQ(service->stats().prefix_hits, 2u);

  // An identical prompt reuses all but its last token.
  Collected c4 = collect(*submit(*service, first));
  EXPECT_EQ(c4.final_event.usage.cached_prompt_tokens, base.size() - 1);
  EXPECT_EQ(c4.tokens, c1.tokens);
}

TEST_F(ServiceTest, EvictsCachedSequencesWhenThePoolIsShort) {
  ServiceConfig config;
  config.scheduler.max_active = 1;
  config.max_cached_sequences = 16;
  config.page_tokens = 8;
  config.max_kv_pages = 24;  // room for about two finished requests
  auto service = std::make_unique<Service>(*model_, *tokenizer_, config);
  for (size_t i = 0; i < 6; ++i) {
    const GenerationRequest r = greedy(prompt(i + 10), 40);
    Collected c = collect(*submit(*service, r));
    ASSERT_EQ(c.final_event.finish_reason, FinishReason::kLength)
        << c.final_event.error.to_string();
    EXPECT_EQ(c.tokens, alone(r).tokens);
  }
  EXPECT_LT(service->stats().cached_sequences, 6u);
  EXPECT_LE(service->stats().kv_pages_in_use, 24u);
}

TEST_F(ServiceTest, StopStringsAndEndOfGeneration) {
  const GenerationRequest plain = greedy(prompt(8), 30);
  const Collected reference = alone(plain);
  ASSERT_GE(reference.text.size(), 12u);
  // A stop string from the middle of the text: the text before its first occurrence, no more.
  GenerationRequest with_stop = plain;
  const std::string stop = reference.text.substr(8, 3);
  with_stop.stop = {"\x01never", stop};
  const Collected s = alone(with_stop);
  EXPECT_EQ(s.final_event.finish_reason, FinishReason::kStop);
  EXPECT_EQ(s.final_event.matched_stop, std::optional<size_t>(1));
  EXPECT_EQ(s.text, reference.text.substr(0, reference.text.find(stop)));
  // ...and generation ends with the token that completed the stop string: the matcher holds back
  // what follows, so a loop that went on decoding would still show the right text.
  size_t needed = 0;
  std::string seen;
  for (const GenerationEvent& e : reference.events) {
    seen += e.text;
    needed += e.tokens.size();
    if (seen.find(stop) != std::string::npos) break;
  }
  EXPECT_EQ(s.tokens.size(), needed);
  EXPECT_EQ(s.final_event.usage.completion_tokens, needed);
  // An end-of-generation token: generation stops at its first occurrence, which is not emitted.
  GenerationRequest with_eog = plain;
  const int32_t eog = reference.tokens[5];
  with_eog.eog_tokens = {eog};
  const Collected g = alone(with_eog);
  const size_t first = static_cast<size_t>(
      std::find(reference.tokens.begin(), reference.tokens.end(), eog) - reference.tokens.begin());
  EXPECT_EQ(g.final_event.finish_reason, FinishReason::kStop);
  EXPECT_EQ(g.tokens, std::vector<int32_t>(reference.tokens.begin(),
                                           reference.tokens.begin() + static_cast<long>(first)));
  EXPECT_EQ(g.final_event.usage.completion_tokens, first + 1);
}

TEST_F(ServiceTest, LogprobsOfGreedyTokens) {
  GenerationRequest r = greedy(prompt(9), 6);
  r.logprobs = true;
  r.top_logprobs = 3;
  const Collected c = alone(r);
  ASSERT_EQ(c.tokens.size(), 6u);
  for (const GenerationEvent& e : c.events) {
    for (const GeneratedToken& t : e.tokens) {
      ASSERT_TRUE(t.logprobs.has_value());
      EXPECT_EQ(t.logprobs->chosen.token, t.token);
      ASSERT_EQ(t.logprobs->n_top, 3);
      EXPECT_EQ(t.logprobs->top()[0].token, t.token);
      EXPECT_LE(t.logprobs->chosen.logprob, 0.0f);
    }
  }
}

TEST_F(ServiceTest, InvalidRequestsAreRefusedWithTheirField) {
  auto service = make(1);
  auto expect = [&](GenerationRequest r, ErrorCode code, const std::string& field) {
    auto h = service->submit(std::move(r));
    ASSERT_FALSE(h.ok());
    EXPECT_EQ(h.status().code(), code) << h.status().to_string();
    EXPECT_EQ(h.status().where().field, field) << h.status().to_string();
  };
  expect(greedy({}, 4), ErrorCode::kInvalidArgument, "prompt");
  expect(greedy({-1}, 4), ErrorCode::kInvalidArgument, "prompt");
  expect(greedy(std::vector<int32_t>(513, 1), 4), ErrorCode::kLimitExceeded, "prompt");
  expect(greedy({1, 2}, 0), ErrorCode::kInvalidArgument, "max_tokens");
  GenerationRequest r = greedy({1, 2}, 4);
  r.top_logprobs = 21;
  expect(r, ErrorCode::kInvalidArgument, "top_logprobs");
  r = greedy({1, 2}, 4);
  r.sampling.top_p = 2.0f;
  expect(r, ErrorCode::kInvalidArgument, "top_p");
  r = greedy({1, 2}, 4);
  r.stop = {""};
  expect(r, ErrorCode::kInvalidArgument, "stop");
}

TEST_F(ServiceTest, ShutdownWithRequestsInFlight) {
  auto service = make(2);
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (size_t i = 0; i < 4; ++i) handles.push_back(submit(*service, greedy(prompt(i), 400)));
  GenerationEvent e;
  ASSERT_TRUE(handles[0]->next(e));
  service->shutdown(0ms);
  for (auto& h : handles) {
    const Collected c = collect(*h);
    EXPECT_TRUE(c.final_event.final);
    EXPECT_EQ(c.final_event.finish_reason, FinishReason::kCancelled);
    EXPECT_EQ(c.final_event.error.code(), ErrorCode::kUnavailable);
  }
  auto late = service->submit(greedy(prompt(0), 4));
  EXPECT_EQ(late.status().code(), ErrorCode::kUnavailable);
  EXPECT_EQ(service->stats().kv_pages_in_use, 0u);

  // A graceful shutdown lets short requests finish.
  auto graceful = make(2);
  auto h1 = submit(*graceful, greedy(prompt(1), 5));
  auto h2 = submit(*graceful, greedy(prompt(2), 5, RequestClass::kBatch));
  graceful->shutdown(60s);
  EXPECT_EQ(collect(*h1).final_event.finish_reason, FinishReason::kLength);
  EXPECT_EQ(collect(*h2).final_event.finish_reason, FinishReason::kLength);
}

TEST_F(ServiceTest, ServingOptionsMakeLogitsIndependentOfTheBatch) { expect_batch_invariant(); }
TEST_F(ServiceTest, EightConcurrentGreedyRequestsEqualEachAlone) {
  expect_eight_concurrent_equal_alone();
}
TEST_F(ServiceTest, CancelFreesPagesWithinOneStep) { expect_cancel_frees_pages(); }
TEST_F(ServiceTest, PrefixReuseHitsAndGivesIdenticalOutput) {
  expect_prefix_reuse_gives_identical_output();
}

// The same checks on a mixture-of-experts model: rows grouped by expert (prefill) must still
// give each sequence the bits it gets alone, and prefix reuse and cancellation work unchanged.
class MoeServiceTest : public ServiceTest {
 protected:
  static void SetUpTestSuite() { make_model("qwen3moe"); }
};
TEST_F(MoeServiceTest, ServingOptionsMakeLogitsIndependentOfTheBatch) { expect_batch_invariant(); }
TEST_F(MoeServiceTest, EightConcurrentGreedyRequestsEqualEachAlone) {
  expect_eight_concurrent_equal_alone();
}
TEST_F(MoeServiceTest, CancelFreesPagesWithinOneStep) { expect_cancel_frees_pages(); }
TEST_F(MoeServiceTest, PrefixReuseHitsAndGivesIdenticalOutput) {
  expect_prefix_reuse_gives_identical_output();
}

// And on an LFM2 model: convolution layers keep their per-token inputs in the KV pages, so a
// fork (prefix reuse) or a batch must not change a sequence's convolution history.
class Lfm2ServiceTest : public ServiceTest {
 protected:
  static void SetUpTestSuite() { make_model("lfm2"); }
};
TEST_F(Lfm2ServiceTest, ServingOptionsMakeLogitsIndependentOfTheBatch) { expect_batch_invariant(); }
TEST_F(Lfm2ServiceTest, EightConcurrentGreedyRequestsEqualEachAlone) {
  expect_eight_concurrent_equal_alone();
}
TEST_F(Lfm2ServiceTest, CancelFreesPagesWithinOneStep) { expect_cancel_frees_pages(); }
TEST_F(Lfm2ServiceTest, PrefixReuseHitsAndGivesIdenticalOutput) {
  expect_prefix_reuse_gives_identical_output();
}

// And with block-quantized KV caches (issue 17 item 4): each row is quantized alone when
// stored, so batches, prefix forks and cancellation leave every sequence's bits unchanged.
class Q8CacheServiceTest : public ServiceTest {
 protected:
  static void SetUpTestSuite() { make_model("qwen2", TensorType::kQ8_0); }
};
TEST_F(Q8CacheServiceTest, ServingOptionsMakeLogitsIndependentOfTheBatch) {
  expect_batch_invariant();
}
TEST_F(Q8CacheServiceTest, EightConcurrentGreedyRequestsEqualEachAlone) {
  expect_eight_concurrent_equal_alone();
}
TEST_F(Q8CacheServiceTest, PrefixReuseHitsAndGivesIdenticalOutput) {
  expect_prefix_reuse_gives_identical_output();
}
class Q4CacheServiceTest : public ServiceTest {
 protected:
  static void SetUpTestSuite() { make_model("llama", TensorType::kQ4_0); }
};
TEST_F(Q4CacheServiceTest, EightConcurrentGreedyRequestsEqualEachAlone) {
  expect_eight_concurrent_equal_alone();
}
TEST_F(Q4CacheServiceTest, PrefixReuseHitsAndGivesIdenticalOutput) {
  expect_prefix_reuse_gives_identical_output();
}

}  // namespace
}  // namespace synapse::serve
