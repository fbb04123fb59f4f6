// SPDX-License-Identifier: Apache-2.0
// The service under load on the Qwen2.5-0.5B shape (synthetic Q8_0 weights, 151936-token
// vocabulary): total generation throughput at concurrency 1, 4, 8 and 16 (interactive requests,
// the HTTP API's default class, so N slots decode N streams, like llama-server -np N), and an
// interactive request's time to first token idle, with 8 background requests saturating the engine,
// and while a durable background job of 200 items runs through the JobWorker as in `synapse serve`;
// and 8 streams constrained to a JSON Schema against the same 8 unconstrained. The
// vocabulary is the Qwen2 fixture's ($SYNAPSE_FIXTURES/tokenizer/vocab/qwen2-vocab.gguf).
// Prints one JSON document. The model is synthesized once and reused:
//   serve_bench [--model PATH] [--threads N] [--tokens N] [--prompt N] [--only throughput]
//               [--draft-max N (speculative decoding by prompt lookup)] [--levels 1,8]
//               [--isolate SYNAPSE (the throughput levels against `SYNAPSE worker`: the engine in
//                a worker process behind the front's WorkerService, as `synapse serve --isolate`)]
// PATH defaults to $SYNAPSE_BENCH_DIR (or /tmp)/synapse-qwen2.5-0.5b-shape-q8_0.gguf.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu_backend.h"
#include "constrain/json_schema.h"
#include "constrain/token_masker.h"
#include "jobs/sqlite_job_store.h"
#include "kernels/kernel_selection.h"
#include "request/job_items.h"
#include "request/job_worker.h"
#include "serve/end_of_generation.h"
#include "serve/service.h"
#include "synth/synth_model.h"
#include "worker/worker_service.h"

namespace synapse {
namespace {

using serve::Clock;
using serve::GenerationEvent;
using serve::GenerationRequest;
using serve::RequestClass;
using serve::RequestHandle;
using serve::Service;
using serve::ServiceConfig;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::vector<int32_t> bench_prompt(size_t n, size_t salt, uint32_t n_vocab) {
  std::vector<int32_t> ids(n);
  for (size_t i = 0; i < n; ++i) {
    ids[i] = static_cast<int32_t>((i * 7919 + salt * 104729 + 17) % (n_vocab - 1000) + 500);
  }
  return ids;
}

GenerationRequest request(std::vector<int32_t> prompt, int32_t max_tokens, RequestClass c) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0.0f;
  r.request_class = c;
  return r;
}

size_t drain(RequestHandle& h) {
  GenerationEvent e;
  size_t tokens = 0;
  while (h.next(e)) {
    if (e.final) tokens = e.usage.completion_tokens;
  }
  return tokens;
}

// Speculative decoding by prompt lookup with this many drafts per step (--draft-max; 0: off).
size_t g_draft_max = 0;

// The service as `synapse serve` (and so `synapse worker`) configures it for one model: the
// file's end-of-generation tokens, the default prefix cache (the prompts differ from their
// first token: no hits). The --isolate figures are compared against these.
std::unique_ptr<Service> make_service(DecoderModel& model, const tokenizer::Tokenizer& tok,
                                      size_t parallel) {
  ServiceConfig config;
  config.scheduler.max_active = parallel;
  config.draft_max = g_draft_max;
  config.eog_tokens = serve::end_of_generation_tokens(model);
  return std::make_unique<Service>(model, tok, config);
}

// The same service in a worker process (`SYNAPSE worker`), reached through frames on a socket.
Result<std::unique_ptr<serve::ModelService>> start_worker(const std::string& synapse,
                                                          const std::string& model, int threads,
                                                          size_t parallel) {
  worker::WorkerOptions o;
  o.argv = {synapse,      "worker",
            "--name",     "bench",
            "-m",         model,
            "--parallel", std::to_string(parallel),
            "--threads",  std::to_string(threads),
            "--ctx",      "2048"};
  if (g_draft_max > 0)
    o.argv.insert(o.argv.end(), {"--lookup", "--draft-max", std::to_string(g_draft_max)});
  o.model_name = "bench";
  SYN_ASSIGN_OR_RETURN(std::unique_ptr<worker::WorkerService> service,
                       worker::WorkerService::start(std::move(o)));
  return std::unique_ptr<serve::ModelService>(std::move(service));
}

// Before a timed round of n streams: n requests as long as the timed ones grow (prompt plus
// completion), cancelled once all have their first token -- a cancelled request's KV pages go
// back to the pool, not to the prefix cache -- so that the round runs on memory already touched:
// the KV pages and the step buffers of n sequences (a worker process is new at each level).
// Without it the round paid the pool's growth, each new 2 MiB page zeroed at its first touch
// inside a step (clear_page was 2.5% of the CPU samples of 8 streams on a 2-core VM): what a
// server pays once in its first minutes, and llama-server at load (it clears its KV cache there).
void warm_up(serve::ModelService& service, size_t n, size_t tokens, uint32_t n_vocab) {
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (size_t i = 0; i < n; ++i) {
    auto h = service.submit(
        request(bench_prompt(tokens, 900 + i, n_vocab), 1000, RequestClass::kInteractive));
    if (h.ok()) handles.push_back(*h);
  }
  // Every one's first token before any is cancelled: a page freed early would serve the next
  // prefill, and the pool would grow to a few sequences only.
  GenerationEvent e;
  for (auto& h : handles) (void)h->next(e);
  for (auto& h : handles) h->cancel();
  for (auto& h : handles) drain(*h);
}

// Seconds to the first event of an interactive request (its first token; max_tokens 1).
double time_to_first_token(Service& s, size_t prompt_tokens, size_t salt, uint32_t n_vocab) {
  const Clock::time_point t0 = Clock::now();
  auto h =
      s.submit(request(bench_prompt(prompt_tokens, salt, n_vocab), 1, RequestClass::kInteractive));
  if (!h.ok()) return -1.0;
  GenerationEvent e;
  (*h)->next(e);
  const double ttft = seconds_since(t0);
  drain(**h);
  return ttft;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Time to first token of interactive requests while a background job of `items` completions
// runs through a JobWorker (2 workers: up to 32 items in flight) on `service`, as `synapse serve`
// runs jobs. Returns {median TTFT in seconds, items the job finished during the measurement}.
std::pair<double, int64_t> ttft_beside_a_job(Service& service, const tokenizer::Tokenizer& tok,
                                             size_t prompt_tokens, uint32_t n_vocab,
                                             size_t repeats) {
  const std::string dir = std::filesystem::temp_directory_path() /
                          ("synapse-serve-bench-jobs-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto store = jobs::SqliteJobStore::open(dir + "/jobs.db");
  if (!store.ok()) return {-1.0, 0};
  request::ServedModel served;
  served.service = &service;
  served.tokenizer = &tok;
  served.id = "bench";
  request::add_constraints(served);
  request::ModelDirectory models;
  models.add(request::unowned(served));
  request::JobWorkerOptions options;
  options.lock_path = dir + "/jobs.db.executor-lock";
  request::JobWorker worker(**store, request::job_item_call(models), options);
  jobs::Submission job;
  job.job_class = jobs::JobClass::kBackground;
  for (size_t i = 0; i < 200; ++i) {
    const nlohmann::json body = {{"prompt", bench_prompt(prompt_tokens, 500 + i, n_vocab)},
                                 {"max_tokens", 64},
                                 {"temperature", 0}};
    job.requests.push_back({"item-" + std::to_string(i), "/v1/completions", body.dump()});
  }
  const std::string id = (*store)->submit(job, std::nullopt)->job.id;
  if (!worker.start().ok()) return {-1.0, 0};
  // Wait until the job's items fill the engine's non-reserved slots.
  while (service.stats().active < 4) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const int64_t before = (*store)->get_job(id)->counts.succeeded;
  std::vector<double> loaded;
  for (size_t r = 0; r < repeats; ++r) {
    loaded.push_back(time_to_first_token(service, prompt_tokens, 600 + r, n_vocab));
  }
  const int64_t finished = (*store)->get_job(id)->counts.succeeded - before;
  worker.stop();
  std::filesystem::remove_all(dir);
  return {median(loaded), finished};
}

int run(int argc, char** argv) {
  // Environment reads before any thread starts.
  const char* dir = std::getenv("SYNAPSE_BENCH_DIR");  // NOLINT(concurrency-mt-unsafe)
  std::string path = std::string(dir ? dir : "/tmp") + "/synapse-qwen2.5-0.5b-shape-q8_0.gguf";
  int threads = 2;
  int32_t gen_tokens = 128;
  size_t prompt_tokens = 64;
  std::string only;     // "throughput": the concurrency levels alone (for A/B runs)
  std::string isolate;  // the synapse program whose `worker` command serves the levels
  std::vector<size_t> levels = {1, 4, 8, 16};  // concurrency levels of the throughput figures
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--model") path = argv[i + 1];
    if (a == "--threads") threads = std::atoi(argv[i + 1]);
    if (a == "--tokens") gen_tokens = std::atoi(argv[i + 1]);
    if (a == "--prompt") prompt_tokens = static_cast<size_t>(std::atoi(argv[i + 1]));
    if (a == "--only") only = argv[i + 1];
    if (a == "--draft-max") g_draft_max = static_cast<size_t>(std::atoi(argv[i + 1]));
    if (a == "--isolate") isolate = argv[i + 1];
    if (a == "--levels") {
      levels.clear();
      for (const char* p = argv[i + 1]; *p != '\0';) {
        char* end = nullptr;
        const unsigned long n = std::strtoul(p, &end, 10);
        if (end == p || n == 0) break;
        levels.push_back(n);
        p = *end == ',' ? end + 1 : end;
      }
    }
  }
  if (levels.empty()) {
    std::fprintf(stderr, "--levels: concurrency levels separated by commas, e.g. 1,8\n");
    return 2;
  }
  const bool synthesized = !std::filesystem::exists(path);
  if (synthesized) {
    SynthOptions o;
    o.arch = "qwen2";
    // The real Qwen2 vocabulary (151936 tokens): the synthetic one stops at a few hundred.
    const char* fixtures = std::getenv("SYNAPSE_FIXTURES");  // NOLINT(concurrency-mt-unsafe)
    o.vocab_from = std::string(fixtures ? fixtures : SYNAPSE_SOURCE_DIR "/../shared/fixtures") +
                   "/tokenizer/vocab/qwen2-vocab.gguf";
    o.n_layer = 24;
    o.n_embd = 896;
    o.n_ff = 4864;
    o.n_head = 14;
    o.n_head_kv = 2;
    o.n_ctx = 2048;
    o.tied_output = true;
    o.type_embedding = o.type_attention = o.type_feed_forward = o.type_output = TensorType::kQ8_0;
    std::fprintf(stderr, "synthesizing %s ...\n", path.c_str());
    if (Status s = synthesize_model(o, path); !s.ok()) {
      std::fprintf(stderr, "synth: %s\n", s.to_string().c_str());
      return 1;
    }
  }
  ThreadPool pool(threads);
  CpuBackend backend(selected_kernels(), pool);
  auto model = DecoderModel::open(path, backend, serve::serving_decoder_options(2048));
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().to_string().c_str());
    return 1;
  }
  auto tok = tokenizer::Tokenizer::from_gguf((*model)->file().metadata());
  if (!tok.ok()) {
    std::fprintf(stderr, "%s\n", tok.status().to_string().c_str());
    return 1;
  }
  const uint32_t n_vocab = (*model)->n_vocab();

  // Which file and which kernels made the figures (SYNAPSE_ISA and SYNAPSE_VNNI stand-ins
  // included), so that runs are never compared blindly.
  const std::string label = synthesized ? "qwen2.5-0.5b shape, Q8_0, synthetic" : path;
  std::string json = "{\n  \"model\": " + nlohmann::json(label).dump() + ",\n";
  json += std::string("  \"isa\": \"") + selected_kernels().variant + "\",\n";
  json += "  \"threads\": " + std::to_string(threads) + ",\n";
  json += "  \"draft_max\": " + std::to_string(g_draft_max) + ",\n";
  json += std::string("  \"worker_process\": ") + (isolate.empty() ? "false" : "true") + ",\n";
  json += "  \"prompt_tokens\": " + std::to_string(prompt_tokens) + ",\n";
  json += "  \"generated_tokens_per_request\": " + std::to_string(gen_tokens) + ",\n";
  json += "  \"throughput\": [\n";
  double single = 0.0;
  const size_t num_levels = levels.size();
  for (size_t li = 0; li < num_levels; ++li) {
    const size_t n = levels[li];
    std::unique_ptr<serve::ModelService> service;
    if (isolate.empty()) {
      service = make_service(**model, *tok, n);
    } else {
      Result<std::unique_ptr<serve::ModelService>> started =
          start_worker(isolate, path, threads, n);
      if (!started.ok()) {
        std::fprintf(stderr, "worker: %s\n", started.status().to_string().c_str());
        return 1;
      }
      service = std::move(started).value();
    }
    warm_up(*service, n, prompt_tokens + static_cast<size_t>(gen_tokens), n_vocab);
    std::vector<std::shared_ptr<RequestHandle>> handles;
    const Clock::time_point t0 = Clock::now();
    for (size_t i = 0; i < n; ++i) {
      handles.push_back(*service->submit(request(bench_prompt(prompt_tokens, 100 + i, n_vocab),
                                                 gen_tokens, RequestClass::kInteractive)));
    }
    size_t total = 0;
    for (auto& h : handles) total += drain(*h);
    const double s = seconds_since(t0);
    const double tps = static_cast<double>(total) / s;
    if (n == 1) single = tps;
    char line[256];
    (void)std::snprintf(line, sizeof line,
                        "    {\"concurrency\": %zu, \"tokens\": %zu, \"seconds\": %.3f, "
                        "\"tokens_per_s\": %.2f, \"speedup\": %.2f}%s\n",
                        n, total, s, tps, single > 0.0 ? tps / single : 0.0,
                        li + 1 < num_levels ? "," : "");
    json += line;
    std::fprintf(stderr, "%s", line);
  }
  if (only == "throughput" || !isolate.empty()) {
    std::fputs((json + "  ]\n}\n").c_str(), stdout);
    return 0;
  }
  json += "  ],\n";

  // Structured outputs: the same 8 requests, each constrained to a JSON object with one free
  // string (so the model can keep writing), one compiled grammar shared by all. The loss is
  // the time masks take on the engine's loop thread.
  {
    const nlohmann::ordered_json schema = {{"type", "object"},
                                           {"properties", {{"text", {{"type", "string"}}}}},
                                           {"required", {"text"}}};
    auto grammar = constrain::compile_json_schema(schema);
    if (!grammar.ok()) {
      std::fprintf(stderr, "%s\n", grammar.status().to_string().c_str());
      return 1;
    }
    auto masker = std::make_shared<constrain::TokenMasker>(
        std::make_shared<const constrain::Grammar>(std::move(grammar).value()),
        std::make_shared<const constrain::TokenTrie>(
            constrain::TokenTrie::from_tokenizer(*tok, {})));
    double unconstrained = 0.0;
    double constrained = 0.0;
    for (const bool constrain_it : {false, true}) {
      auto service = make_service(**model, *tok, 8);
      std::vector<std::shared_ptr<RequestHandle>> handles;
      const Clock::time_point t0 = Clock::now();
      for (size_t i = 0; i < 8; ++i) {
        GenerationRequest r = request(bench_prompt(prompt_tokens, 300 + i, n_vocab), gen_tokens,
                                      RequestClass::kBatch);
        if (constrain_it) r.constraint = masker;
        handles.push_back(*service->submit(std::move(r)));
      }
      size_t total = 0;
      for (auto& h : handles) total += drain(*h);
      (constrain_it ? constrained : unconstrained) = static_cast<double>(total) / seconds_since(t0);
    }
    char line[256];
    (void)std::snprintf(
        line, sizeof line,
        "  \"constrained_8\": {\"tokens_per_s\": %.2f, \"unconstrained_tokens_per_s\": "
        "%.2f, \"loss_pct\": %.2f},\n",
        constrained, unconstrained, 100.0 * (1.0 - constrained / unconstrained));
    json += line;
    std::fprintf(stderr, "%s", line);
  }

  // Time to first token: idle, then beside 8 background requests that keep decoding (the
  // service's 8 slots: 7 of them take slots, the eighth waits; the interactive request takes
  // the slot reserved for its class).
  constexpr size_t kRepeats = 5;
  auto service = make_service(**model, *tok, 8);
  std::vector<double> idle, loaded;
  for (size_t r = 0; r < kRepeats; ++r) {
    idle.push_back(time_to_first_token(*service, prompt_tokens, 200 + r, n_vocab));
  }
  std::vector<std::shared_ptr<RequestHandle>> background;
  for (size_t i = 0; i < 8; ++i) {
    background.push_back(*service->submit(
        request(bench_prompt(prompt_tokens, 300 + i, n_vocab), 1900, RequestClass::kBackground)));
  }
  GenerationEvent e;
  for (size_t i = 0; i + 1 < background.size(); ++i) background[i]->next(e);  // 7 decoding
  for (size_t r = 0; r < kRepeats; ++r) {
    loaded.push_back(time_to_first_token(*service, prompt_tokens, 400 + r, n_vocab));
  }
  for (auto& h : background) h->cancel();
  for (auto& h : background) drain(*h);
  const auto [with_job, job_items] =
      ttft_beside_a_job(*service, *tok, prompt_tokens, n_vocab, kRepeats);
  char line[768];
  (void)std::snprintf(line, sizeof line,
                      "  \"time_to_first_token_ms\": {\"idle_median\": %.1f, "
                      "\"with_8_background_median\": %.1f, \"ratio\": %.2f, "
                      "\"with_background_job_median\": %.1f, \"job_ratio\": %.2f, "
                      "\"job_items_finished_meanwhile\": %lld, \"repeats\": %zu}\n}\n",
                      median(idle) * 1000, median(loaded) * 1000, median(loaded) / median(idle),
                      with_job * 1000, with_job / median(idle), static_cast<long long>(job_items),
                      kRepeats);
  json += line;
  std::fputs(json.c_str(), stdout);
  return 0;
}

}  // namespace
}  // namespace synapse

int main(int argc, char** argv) {
  try {
    return synapse::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "serve_bench: %s\n", e.what());
    return 1;
  }
}
