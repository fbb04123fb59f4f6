// SPDX-License-Identifier: Apache-2.0
// What the commands that execute a model share: resolving MODEL (path, package or store name),
// the thread pool and CPU backend, loading and verifying the decoder, and the end-of-generation
// tokens of its vocabulary.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu_backend.h"
#include "base/thread_pool.h"
#include "model/decoder.h"
#include "store/model_ref.h"
#include "tokenizer/tokenizer.h"

namespace synapse::cli {

struct RunOptions {
  std::string model;
  std::string store;
  int threads = 0;                        // 0: physical cores
  uint32_t n_ctx = 0;                     // 0: the model's (at most 4096)
  std::string activations = "quantized";  // quantized|f32: matmul activation precision
  std::string cache_type = "f32";         // f32|f16|q8_0|q4_0: the KV cache's element type
};

// -m/--model, --store, -t/--threads, --ctx, --activations, --cache-type.
void add_run_options(CLI::App* cmd, RunOptions& options);
// The same without -m (a command that takes its models another way).
void add_load_options(CLI::App* cmd, RunOptions& options);
// --cache-type alone (for commands with options of their own, like `synapse bench`).
void add_cache_type_option(CLI::App* cmd, std::string& cache_type);

struct LoadedModel {
  ResolvedModel resolved;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<CpuBackend> backend;
  std::unique_ptr<DecoderModel> model;
  double load_ms = 0.0;
};

// `base` carries options a command needs beyond RunOptions (serving's matmul route); n_ctx and
// the activation precision come from `options`.
Result<LoadedModel> load_model(const RunOptions& options, DecoderOptions base = {});
// A second model on `target`'s backend and threads with the same context and KV options:
// speculative decoding's draft (`--draft MODEL`). Refused unless its vocabulary is the target's
// token for token (kInvalidArgument, field "--draft").
Result<std::unique_ptr<DecoderModel>> load_draft_model(const std::string& draft,
                                                       const RunOptions& options,
                                                       LoadedModel& target);
Result<tokenizer::Tokenizer> load_tokenizer(const DecoderModel& model);

}  // namespace synapse::cli
