// SPDX-License-Identifier: Apache-2.0
#include "cli/model_runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "base/cpu_info.h"
#include "cli/cli_util.h"
#include "kernels/kernel_selection.h"

namespace synapse::cli {

void add_run_options(CLI::App* cmd, RunOptions& o) {
  cmd->add_option("-m,--model", o.model, "GGUF or package file, or a stored model's name")
      ->required();
  add_load_options(cmd, o);
}

void add_load_options(CLI::App* cmd, RunOptions& o) {
  add_store_option(cmd, o.store);
  cmd->add_option("-t,--threads", o.threads, "Threads (default: physical cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("-c,--ctx", o.n_ctx, "Context length in tokens (default: the model's, <= 4096)")
      ->check(CLI::Range(1u, 1u << 24));
  cmd->add_option("--activations", o.activations,
                  "Matmul activations: quantized (fast, as llama.cpp) or f32 (exact)")
      ->check(CLI::IsMember({"quantized", "f32"}))
      ->capture_default_str();
  add_cache_type_option(cmd, o.cache_type);
}

void add_cache_type_option(CLI::App* cmd, std::string& cache_type) {
  cmd->add_option("--cache-type", cache_type,
                  "KV cache element type: f32 (exact), f16 (half the memory, llama.cpp's "
                  "default), q8_0 (0.27x f32) or q4_0 (0.14x f32); docs/serving.md")
      ->check(CLI::IsMember({"f32", "f16", "q8_0", "q4_0"}))
      ->capture_default_str();
}

namespace {

// A raw GGUF is prepared into the store once (visibly) and the package runs: execution always
// starts from a verified package (docs/formats/synapse-package.md).
Result<ResolvedModel> resolve_for_run(const std::string& model, const std::string& store) {
  StageProgress progress(model);
  ResolveOptions resolve;
  resolve.store_directory = store;
  resolve.prepare_gguf = true;
  resolve.notice = [](std::string_view message) {
    std::fprintf(stderr, "%.*s\n", static_cast<int>(message.size()), message.data());
  };
  resolve.progress = [&progress](std::string_view stage, uint64_t done, uint64_t total) {
    progress.update(stage, done, total);
  };
  resolve.created_by = created_by();
  Result<ResolvedModel> resolved = resolve_model(model, resolve);
  progress.finish();
  return resolved;
}

DecoderOptions decoder_options(const RunOptions& o, DecoderOptions base) {
  DecoderOptions options = base;
  options.n_ctx = o.n_ctx;
  if (o.activations == "f32") options.matmul_mode.path = DotPath::kF32;
  if (o.cache_type == "f16") options.kv_type = TensorType::kF16;
  if (o.cache_type == "q8_0") options.kv_type = TensorType::kQ8_0;
  if (o.cache_type == "q4_0") options.kv_type = TensorType::kQ4_0;
  return options;
}

}  // namespace

Result<LoadedModel> load_model(const RunOptions& o, DecoderOptions base) {
  const auto start = std::chrono::steady_clock::now();
  LoadedModel loaded;
  SYN_ASSIGN_OR_RETURN(loaded.resolved, resolve_for_run(o.model, o.store));
  const int threads = o.threads > 0 ? o.threads : std::max(1, CpuInfo::detect().physical_cores);
  loaded.pool = std::make_unique<ThreadPool>(threads);
  loaded.backend = std::make_unique<CpuBackend>(selected_kernels(), *loaded.pool);
  SYN_ASSIGN_OR_RETURN(loaded.model, DecoderModel::open(loaded.resolved.path, *loaded.backend,
                                                        decoder_options(o, base)));
  loaded.load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return loaded;
}

Result<std::unique_ptr<DecoderModel>> load_draft_model(const std::string& draft,
                                                       const RunOptions& o, LoadedModel& target) {
  Result<ResolvedModel> resolved = resolve_for_run(draft, o.store);
  if (!resolved.ok()) return std::move(resolved).take_status().with_field("--draft");
  // Its own training context (drafting stops past it) and KV pages on demand, like the target's.
  DecoderOptions options = decoder_options(o, {});
  options.n_ctx = 0;
  options.matmul_mode = target.model->plan().matmul_mode;
  Result<std::unique_ptr<DecoderModel>> model =
      DecoderModel::open(resolved->path, *target.backend, options);
  if (!model.ok()) return std::move(model).take_status().with_field("--draft");
  SYN_ASSIGN_OR_RETURN(const tokenizer::Tokenizer target_tok, load_tokenizer(*target.model));
  SYN_ASSIGN_OR_RETURN(const tokenizer::Tokenizer draft_tok, load_tokenizer(**model));
  const tokenizer::Vocab& a = target_tok.vocab();
  const tokenizer::Vocab& b = draft_tok.vocab();
  std::string differs;
  if (a.size() != b.size() || (*model)->n_vocab() != target.model->n_vocab()) {
    differs = std::to_string(b.size()) + " tokens against the model's " + std::to_string(a.size());
  }
  for (size_t i = 0; differs.empty() && i < a.size(); ++i) {
    const auto id = static_cast<tokenizer::TokenId>(i);
    if (a.text(id) != b.text(id)) differs = "token " + std::to_string(i) + " differs";
  }
  if (!differs.empty()) {
    return Status(ErrorCode::kInvalidArgument,
                  "the draft model's vocabulary is not the model's (" + differs +
                      "): speculative decoding needs the same token ids",
                  ErrorWhere{.field = "--draft"});
  }
  return model;
}

Result<tokenizer::Tokenizer> load_tokenizer(const DecoderModel& model) {
  return tokenizer::Tokenizer::from_gguf(model.file().metadata());
}

}  // namespace synapse::cli
