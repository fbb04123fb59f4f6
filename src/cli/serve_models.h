// SPDX-License-Identifier: Apache-2.0
// The models `synapse serve` answers for: each `-m MODEL` (a path, a store name or a digest; the
// option may repeat; kept loaded once used, as llama-server keeps its model), or with no `-m`
// every named model in the store (loaded on first use, unloaded after --keep-alive idle, as
// Ollama does). `--max-memory` and `--max-loaded` bound what is loaded at once (the least
// recently used idle model makes room). Builds the request::ModelDirectory and its loader: a
// model is loaded with the serving decoder options, its own thread pool and its own Service --
// in this process, or with --isolate in a supervised worker process of its own (`synapse
// worker`, started by the front; docs/serving.md#worker-processes).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "cli/model_runner.h"
#include "request/model_directory.h"
#include "serve/service.h"

namespace synapse::cli {

struct ServeModelsOptions {
  std::vector<std::string> models;  // -m, repeatable; empty: every model in the store
  std::string alias;                // the first -m model's id
  RunOptions run;                   // store, threads, ctx, activations, cache type
  size_t parallel = 4;
  size_t queue_limit = 64;
  std::string chat_template;
  std::string json_whitespace = "compact";
  uint64_t max_memory = 0;  // 0: three quarters of RAM
  size_t max_loaded = 0;
  std::string keep_alive = "5m";
  bool lookup = false;   // speculative decoding by prompt lookup (docs/speculative.md) ...
  std::string draft;     // ... or with this draft model, for the first -m model
  size_t draft_max = 6;  // drafted tokens per step
  // Worker processes (--isolate): each model's engine in a supervised child process.
  bool isolate = false;
  double worker_hang_timeout_s = 60.0;
  uint64_t worker_memory_limit = 0;  // resident bytes; 0: none
  size_t worker_crash_budget = 3;
  double worker_crash_window_s = 60.0;
  double worker_cool_down_s = 30.0;
};

// A model loaded in this process with its Service (what `synapse serve` runs per model without
// --isolate, and what a worker process runs). `drafted`: the name of the model --draft drafts
// for.
struct InProcessModel : request::ModelInstance {
  LoadedModel loaded;
  std::unique_ptr<DecoderModel> draft;  // speculative decoding's draft model (--draft)
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<serve::Service> service;
  ~InProcessModel() override;  // the Service stops first
};
Result<std::unique_ptr<InProcessModel>> load_in_process(
    const ServeModelsOptions& options, const request::ModelSource& source,
    const std::shared_ptr<serve::ComputeGate>& gate, const std::string& drafted);

void add_serve_model_options(CLI::App* cmd, ServeModelsOptions& options);

// Registers the models and the loader in `directory`, then loads the first -m model (a model
// that cannot load is an error at start-up, not on the first request). not_found when there is
// nothing to serve.
Status setup_served_models(const ServeModelsOptions& options, request::ModelDirectory& directory);

}  // namespace synapse::cli
