// SPDX-License-Identifier: Apache-2.0
// The models `synapse serve` answers for: each `-m MODEL` (a path, a store name or a digest; the
// option may repeat; kept loaded once used, as llama-server keeps its model), or with no `-m`
// every named model in the store (loaded on first use, unloaded after --keep-alive idle, as
// Ollama does). `--max-memory` and `--max-loaded` bound what is loaded at once (the least
// recently used idle model makes room). Builds the request::ModelDirectory and its loader: a
// model is loaded with the serving decoder options, its own thread pool and its own Service.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "cli/model_runner.h"
#include "request/model_directory.h"

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
};

void add_serve_model_options(CLI::App* cmd, ServeModelsOptions& options);

// Registers the models and the loader in `directory`, then loads the first -m model (a model
// that cannot load is an error at start-up, not on the first request). not_found when there is
// nothing to serve.
Status setup_served_models(const ServeModelsOptions& options, request::ModelDirectory& directory);

}  // namespace synapse::cli
