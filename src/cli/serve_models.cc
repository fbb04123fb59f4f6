// SPDX-License-Identifier: Apache-2.0
#include "cli/serve_models.h"

#include <filesystem>
#include <memory>

#include "format/model_file.h"
#include "model/arch/architecture.h"
#include "serve/end_of_generation.h"
#include "serve/service.h"
#include "store/model_store.h"
#include "worker/worker_service.h"

namespace synapse::cli {
namespace {

// The front's side of a model served by a worker process: the model file's metadata (its
// tokenizer and chat template: the front templates and tokenizes) and the WorkerService.
struct WorkerInstance : request::ModelInstance {
  std::unique_ptr<ModelFile> file;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<worker::WorkerService> service;
  ~WorkerInstance() override { service.reset(); }
};

request::ServedKind kind_of(const serve::ModelService& service) {
  return service.generates()    ? request::ServedKind::kGeneration
         : service.can_rerank() ? request::ServedKind::kRerank
                                : request::ServedKind::kEmbedding;
}

request::ServedModelOptions served_model_options(const ServeModelsOptions& o) {
  request::ServedModelOptions served_options;
  served_options.chat_template = o.chat_template;
  served_options.flexible_json = o.json_whitespace == "flexible";
  return served_options;
}

uint64_t file_bytes(const std::string& path, uint64_t otherwise) {
  std::error_code ec;
  const uintmax_t bytes = std::filesystem::file_size(path, ec);
  return ec ? otherwise : bytes;
}

std::string this_executable() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("synapse") : exe.string();
}

// `synapse worker` with what it needs of this server's options to load `source` as this
// process would.
std::vector<std::string> worker_command_line(const ServeModelsOptions& o,
                                             const request::ModelSource& source,
                                             const std::string& drafted) {
  const auto number = [](size_t n) { return std::to_string(n); };
  std::vector<std::string> argv = {this_executable(),
                                   "worker",
                                   "--name",
                                   source.name,
                                   "-m",
                                   source.ref,
                                   "--parallel",
                                   number(o.parallel),
                                   "--queue-limit",
                                   number(o.queue_limit),
                                   "--json-whitespace",
                                   o.json_whitespace,
                                   "--activations",
                                   o.run.activations,
                                   "--cache-type",
                                   o.run.cache_type,
                                   "--draft-max",
                                   number(o.draft_max)};
  if (!o.run.store.empty()) argv.insert(argv.end(), {"--store", o.run.store});
  if (o.run.threads > 0) argv.insert(argv.end(), {"--threads", std::to_string(o.run.threads)});
  if (o.run.n_ctx > 0) argv.insert(argv.end(), {"--ctx", std::to_string(o.run.n_ctx)});
  if (!o.chat_template.empty()) argv.insert(argv.end(), {"--chat-template", o.chat_template});
  if (o.lookup) argv.emplace_back("--lookup");
  if (!o.draft.empty() && source.name == drafted) argv.insert(argv.end(), {"--draft", o.draft});
  return argv;
}

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

Result<std::unique_ptr<request::ModelInstance>> load_in_worker(const ServeModelsOptions& o,
                                                               const request::ModelSource& source,
                                                               const std::string& drafted) {
  auto instance = std::make_unique<WorkerInstance>();
  SYN_ASSIGN_OR_RETURN(instance->file, open_model_file(source.path));
  const GgufMetadata& metadata = instance->file->metadata();
  SYN_ASSIGN_OR_RETURN(const HParams hparams, read_model_hparams(metadata));
  SYN_ASSIGN_OR_RETURN(tokenizer::Tokenizer tok, tokenizer::Tokenizer::from_gguf(metadata));
  instance->tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(tok));
  SYN_ASSIGN_OR_RETURN(instance->served, request::describe_served_model(
                                             source.name, metadata, hparams.pooling,
                                             *instance->tokenizer, served_model_options(o)));
  worker::WorkerOptions w;
  w.argv = worker_command_line(o, source, drafted);
  w.model_name = source.name;
  w.hang_timeout = to_ms(o.worker_hang_timeout_s);
  w.memory_limit_bytes = o.worker_memory_limit;
  w.crash_budget = o.worker_crash_budget;
  w.crash_window = to_ms(o.worker_crash_window_s);
  w.cool_down = to_ms(o.worker_cool_down_s);
  SYN_ASSIGN_OR_RETURN(instance->service, worker::WorkerService::start(std::move(w)));
  instance->served.service = instance->service.get();
  instance->kind = kind_of(*instance->service);
  instance->bytes = file_bytes(source.path, source.bytes) + instance->service->kv_capacity_bytes();
  if (!o.draft.empty() && source.name == drafted) instance->bytes += file_bytes(o.draft, 0);
  return std::unique_ptr<request::ModelInstance>(std::move(instance));
}

// The id clients name in "model" for a -m reference: the store name, or the file name without
// its extension.
std::string model_id(const std::string& ref) {
  const std::filesystem::path p(ref);
  if (p.has_extension() || ref.find('/') != std::string::npos) {
    if (std::filesystem::exists(p)) return p.stem().string();
  }
  return ref;
}

// A -m reference as a source: a file on disk (used as it is), else a store name or digest.
Result<request::ModelSource> source_for(const std::string& ref, const std::string& name,
                                        const std::string& store_directory) {
  request::ModelSource source;
  source.name = name;
  source.ref = ref;
  source.keep_alive = request::KeepAlive(-1);
  std::string path = ref;
  if (!std::filesystem::is_regular_file(ref)) {
    SYN_ASSIGN_OR_RETURN(ModelStore store, ModelStore::open(store_directory));
    Result<StoredModel> stored = store.find(ref);
    if (!stored.ok()) {
      return Status(
          stored.status().code(),
          "no model file or stored model named '" + ref + "': " + stored.status().message(),
          ErrorWhere{.path = ref});
    }
    path = stored->path;
    source.digest = stored->digest;
    source.created = stored->imported_at;
  }
  source.path = path;
  std::error_code ec;
  source.bytes = std::filesystem::file_size(path, ec);
  if (ec) return Status(ErrorCode::kNotFound, ec.message(), ErrorWhere{.path = path});
  SYN_ASSIGN_OR_RETURN(source.kind, request::probe_served_kind(path));
  return source;
}

// Every named model of the store; an unreadable one is skipped with a warning (a bad file
// must not keep the others from being served).
Result<std::vector<request::ModelSource>> store_sources(const std::string& store_directory) {
  SYN_ASSIGN_OR_RETURN(ModelStore store, ModelStore::open(store_directory));
  SYN_ASSIGN_OR_RETURN(const std::vector<StoredModel> stored, store.list());
  std::vector<request::ModelSource> sources;
  for (const StoredModel& m : stored) {
    if (m.aliases.empty()) continue;  // no name: waiting for gc
    request::ModelSource source;
    source.name = m.aliases.front();
    source.aliases.assign(m.aliases.begin() + 1, m.aliases.end());
    source.ref = m.aliases.front();
    source.path = m.path;
    source.digest = m.digest;
    source.bytes = m.bytes;
    source.created = m.imported_at;
    Result<request::ServedKind> kind = request::probe_served_kind(m.path);
    if (!kind.ok()) {
      std::fprintf(stderr, "synapse serve: skipping %s: %s\n", source.name.c_str(),
                   kind.status().to_string().c_str());
      continue;
    }
    source.kind = *kind;
    sources.push_back(std::move(source));
  }
  return sources;
}

}  // namespace

InProcessModel::~InProcessModel() { service.reset(); }

Result<std::unique_ptr<InProcessModel>> load_in_process(
    const ServeModelsOptions& o, const request::ModelSource& source,
    const std::shared_ptr<serve::ComputeGate>& gate, const std::string& drafted) {
  RunOptions run = o.run;
  run.model = source.ref;
  auto instance = std::make_unique<InProcessModel>();
  SYN_ASSIGN_OR_RETURN(instance->loaded, load_model(run, serve::serving_decoder_options()));
  DecoderModel& model = *instance->loaded.model;
  SYN_ASSIGN_OR_RETURN(tokenizer::Tokenizer tok, load_tokenizer(model));
  instance->tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(tok));
  SYN_ASSIGN_OR_RETURN(
      instance->served,
      request::describe_served_model(source.name, model.file().metadata(), model.hparams().pooling,
                                     *instance->tokenizer, served_model_options(o)));
  serve::ServiceConfig config;
  config.scheduler.max_active = o.parallel;
  config.scheduler.max_queued = {o.queue_limit, o.queue_limit, o.queue_limit};
  config.eog_tokens = serve::end_of_generation_tokens(model);
  config.compute_gate = gate;
  config.draft_max = o.lookup || !o.draft.empty() ? o.draft_max : 0;
  if (!o.draft.empty() && source.name == drafted) {
    SYN_ASSIGN_OR_RETURN(instance->draft, load_draft_model(o.draft, run, instance->loaded));
    config.draft_model = instance->draft.get();
  }
  instance->service = std::make_unique<serve::Service>(model, *instance->tokenizer, config);
  instance->served.service = instance->service.get();
  instance->kind = kind_of(*instance->service);
  instance->bytes = file_bytes(instance->loaded.resolved.path, source.bytes) +
                    instance->service->kv_capacity_bytes();
  if (instance->draft) instance->bytes += file_bytes(instance->draft->file().path(), 0);
  return instance;
}

void add_serve_model_options(CLI::App* cmd, ServeModelsOptions& o) {
  cmd->add_option("-m,--model", o.models,
                  "Model to serve: a GGUF or package file, or a stored model's name; repeat for "
                  "several (default: every model in the store, loaded on demand)");
  add_load_options(cmd, o.run);
  cmd->add_option("--alias", o.alias, "Model id clients use for the first -m model");
  cmd->add_option("--parallel", o.parallel, "Sequences decoded together, per model")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--queue-limit", o.queue_limit,
                  "Requests each class (interactive, batch, background) may queue per model; "
                  "more get 429")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--chat-template", o.chat_template,
                  "Built-in chat template (chatml, llama3, llama2, mistral, phi3, gemma, ...) "
                  "instead of the model's");
  cmd->add_option("--json-whitespace", o.json_whitespace,
                  "Structured outputs: compact JSON, or flexible (whitespace between tokens)")
      ->check(CLI::IsMember({"compact", "flexible"}))
      ->default_val("compact");
  cmd->add_option("--max-memory", o.max_memory,
                  "Memory the loaded models may take together, e.g. 8GB (default: 3/4 of RAM); "
                  "the least recently used idle model is unloaded to make room")
      ->transform(CLI::AsSizeValue(false));
  cmd->add_option("--max-loaded", o.max_loaded, "Models loaded at once (default: no limit)")
      ->check(CLI::Range(size_t{1}, size_t{1024}));
  cmd->add_flag("--lookup", o.lookup,
                "Speculative decoding by prompt lookup: each step also verifies tokens that "
                "followed the last ones earlier in the text (same output; a request opts out "
                "with \"speculative\": false)");
  cmd->add_option("--draft", o.draft,
                  "Speculative decoding for the first -m model with this smaller model of the "
                  "same vocabulary (same output; a request opts out with \"speculative\": false)")
      ->excludes("--lookup");
  cmd->add_option("--draft-max", o.draft_max,
                  "With --lookup or --draft: most drafted tokens per step")
      ->check(CLI::Range(size_t{1}, size_t{64}))
      ->capture_default_str();
  cmd->add_flag("--isolate", o.isolate,
                "Run each model's engine in a supervised worker process of its own: a crash "
                "(or a hung or oversized worker, killed) fails only that model's requests in "
                "flight, with a retryable worker_crashed error, and the worker is restarted");
  cmd->add_option("--worker-hang-timeout", o.worker_hang_timeout_s,
                  "With --isolate: seconds without an engine step, while requests are in "
                  "flight, after which a worker is killed and restarted")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  cmd->add_option("--worker-memory-limit", o.worker_memory_limit,
                  "With --isolate: resident memory a worker may use, e.g. 6GB; one past it is "
                  "killed and restarted (default: none)")
      ->transform(CLI::AsSizeValue(false));
  cmd->add_option("--worker-crash-budget", o.worker_crash_budget,
                  "With --isolate: crashes within --worker-crash-window after which a model is "
                  "unavailable for --worker-cool-down")
      ->check(CLI::Range(size_t{1}, size_t{1000}))
      ->capture_default_str();
  cmd->add_option("--worker-crash-window", o.worker_crash_window_s,
                  "With --isolate: the crash budget's window, in seconds")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  cmd->add_option("--worker-cool-down", o.worker_cool_down_s,
                  "With --isolate: seconds a model whose crash budget is spent stays unavailable")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  cmd->add_option("--keep-alive", o.keep_alive,
                  "How long a store model stays loaded after its last request (5m, 1h, 0: "
                  "unload at once, -1: keep); -m models are kept")
      ->capture_default_str();
}

Status setup_served_models(const ServeModelsOptions& o, request::ModelDirectory& directory) {
  request::DirectoryOptions options;
  options.max_memory_bytes = o.max_memory;
  options.max_loaded = o.max_loaded;
  SYN_ASSIGN_OR_RETURN(options.keep_alive, request::parse_keep_alive(o.keep_alive));
  // One gate for every model this server loads: their steps take the cores in turn, by class
  // and fair share, instead of all at once.
  auto gate = std::make_shared<serve::ComputeGate>();
  const std::string drafted =
      o.models.empty() ? std::string() : (o.alias.empty() ? model_id(o.models.front()) : o.alias);
  if (!o.draft.empty() && o.models.empty()) {
    return Status(ErrorCode::kInvalidArgument, "--draft drafts for the first -m model; none given",
                  ErrorWhere{.field = "--draft"});
  }
  directory.set_loader(
      [o, gate, drafted](
          const request::ModelSource& source) -> Result<std::unique_ptr<request::ModelInstance>> {
        if (o.isolate) return load_in_worker(o, source, drafted);
        SYN_ASSIGN_OR_RETURN(std::unique_ptr<InProcessModel> model,
                             load_in_process(o, source, gate, drafted));
        return std::unique_ptr<request::ModelInstance>(std::move(model));
      },
      options);
  if (o.models.empty()) {
    SYN_ASSIGN_OR_RETURN(std::vector<request::ModelSource> sources, store_sources(o.run.store));
    if (sources.empty()) {
      return Status(ErrorCode::kNotFound,
                    "no model to serve: pass -m MODEL, or put models in the store (synapse pull "
                    "hf.co/ORG/REPO, synapse models import FILE)");
    }
    for (request::ModelSource& source : sources) directory.add_source(std::move(source));
    return ok_status();
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < o.models.size(); ++i) {
    const std::string& ref = o.models[i];
    const std::string name = i == 0 && !o.alias.empty() ? o.alias : model_id(ref);
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      return Status(ErrorCode::kInvalidArgument,
                    "two -m models are both named '" + name + "' (use --alias for the first)");
    }
    names.push_back(name);
    SYN_ASSIGN_OR_RETURN(request::ModelSource source, source_for(ref, name, o.run.store));
    directory.add_source(std::move(source));
  }
  return directory.load(names.front());
}

}  // namespace synapse::cli
