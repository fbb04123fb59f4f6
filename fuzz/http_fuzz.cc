// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for `synapse serve`'s HTTP surface, in process and without sockets: the input
// is the bytes a client sends on one connection. They go through the real request parser (head,
// then body, as the server's loop reads them; several pipelined requests per input) and each
// complete request through the real route table and gate (server::make_server_hooks) of a server
// that serves a tiny synthesized decoder (context 64, so every generation is short), its
// embeddings, and the durable-job and batch routes over a SQLite store in a temporary directory.
// Every response must be well formed: a status in 100..599, and an error body (status >= 400)
// that is OpenAI's JSON error shape; no crash, no hang, no leak (ASan/UBSan).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "backend/cpu_backend.h"
#include "base/thread_pool.h"
#include "chat/chat_template.h"
#include "http/request_parser.h"
#include "jobs/sqlite_job_store.h"
#include "kernels/kernel_selection.h"
#include "model/decoder.h"
#include "request/served_model.h"
#include "serve/service.h"
#include "server/http_server.h"
#include "synth/synth_model.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace synapse;

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "http_fuzz: %s\n", why.c_str());
  std::abort();
}

// The served world, built once: a model, its service, a job store and the hooks over them.
struct World {
  std::filesystem::path dir;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<CpuBackend> backend;
  std::unique_ptr<DecoderModel> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<serve::Service> service;
  std::unique_ptr<jobs::SqliteJobStore> store;
  request::ServedModel served;
  request::ModelDirectory models;
  server::JobsApi jobs;
  server::ServerOptions options;
  server::HttpMetrics metrics;
  http::ServerHooks hooks;

  World() {
    char templ[] = "/tmp/synapse-http-fuzz-XXXXXX";
    if (::mkdtemp(templ) == nullptr) fail("mkdtemp");
    dir = templ;
    SynthOptions o;
    o.arch = "qwen2";
    o.n_embd = 32;
    o.n_ff = 64;
    o.n_layer = 1;
    o.n_head = 2;
    o.n_head_kv = 1;
    o.n_ctx = 64;
    const std::string model_path = (dir / "tiny.gguf").string();
    if (!synthesize_model(o, model_path).ok()) fail("synth");
    pool = std::make_unique<ThreadPool>(1);
    backend = std::make_unique<CpuBackend>(selected_kernels(), *pool);
    auto m = DecoderModel::open(model_path, *backend, serve::serving_decoder_options());
    if (!m.ok()) fail(m.status().to_string());
    model = std::move(*m);
    auto t = tokenizer::Tokenizer::from_gguf(model->file().metadata());
    if (!t.ok()) fail(t.status().to_string());
    tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(*t));
    serve::ServiceConfig config;
    config.scheduler.max_active = 2;
    config.scheduler.max_queued = {4, 4, 4};
    service = std::make_unique<serve::Service>(*model, *tokenizer, config);
    // Described as `synapse serve` describes it (the synthesized vocabulary's ChatML template),
    // so that chat requests reach the template.
    auto described = request::describe_served_model("tiny", model->file().metadata(),
                                                    model->hparams().pooling, *tokenizer, {});
    if (!described.ok()) fail(described.status().to_string());
    served = std::move(*described);
    served.service = service.get();
    models.add(request::unowned(served));
    auto s = jobs::SqliteJobStore::open((dir / "jobs.db").string());
    if (!s.ok()) fail(s.status().to_string());
    store = std::move(*s);
    jobs.store = store.get();
    options.models = &models;
    options.jobs = &jobs;
    options.max_body_bytes = 64 << 10;
    hooks = server::make_server_hooks(options, metrics);
  }
  ~World() {
    service->shutdown(std::chrono::milliseconds(0));
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

// Collects a streamed response, bounded: a stream that never ends is a hang.
class StringSink final : public http::StreamSink {
 public:
  bool write(std::string_view data) override {
    out.append(data);
    return true;
  }
  bool client_gone() override { return false; }
  std::string out;
};

void check_response(const http::Response& res) {
  if (res.status < 100 || res.status > 599) fail("status " + std::to_string(res.status));
  if (res.status < 400 || res.producer) return;
  const auto body = nlohmann::json::parse(res.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.contains("error") || !body["error"].contains("code") ||
      !body["error"]["message"].is_string()) {
    fail("error body not in OpenAI's shape: " + res.body.substr(0, 200));
  }
}

void run(World& world, http::Request& req) {
  if (world.hooks.gate) {
    if (std::optional<http::Response> refused = world.hooks.gate(req)) {
      return check_response(*refused);
    }
  }
  http::Response res;
  world.hooks.handler(req, res);
  check_response(res);
  if (res.producer) {
    StringSink sink;
    for (int calls = 0; res.producer(sink); ++calls) {
      if (calls > 100'000) fail("a stream that does not end");
    }
    if (res.on_stream_end) res.on_stream_end();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World world;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  http::ParserLimits limits;
  limits.max_body_bytes = world.options.max_body_bytes;
  for (int requests = 0; requests < 8 && !input.empty(); ++requests) {
    http::HeadParse head = http::parse_request_head(input, limits);
    if (head.state != http::HeadParse::State::kComplete) return 0;
    input.remove_prefix(head.consumed);
    http::BodyReader body(head.head, limits.max_body_bytes);
    const http::BodyReader::Step step = body.feed(input);
    if (!step.done) return 0;  // a framing error, or the body never completes
    input.remove_prefix(step.consumed);
    http::Request req = std::move(head.head.request);
    req.body = body.take_body();
    run(world, req);
  }
  return 0;
}
