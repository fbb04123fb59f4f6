// SPDX-License-Identifier: Apache-2.0
// The models one server answers for, found by the name a request writes in "model", and loaded
// on demand. A model is either given loaded (`add`: tests, tools; never unloaded) or known by a
// `ModelSource` that the directory's loader turns into a running `ModelInstance` on first use.
// A loaded model stays for its keep-alive after its last request (per model, or per request as
// Ollama's `keep_alive`: 0 unloads as soon as it is idle, negative keeps it), and the least
// recently used idle model is unloaded when loading another would pass the memory budget or the
// count of loaded models. A model with a request in flight (a `ModelHandle` alive: a running
// stream included) is never unloaded. Requests for a model being loaded wait for it (bounded).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "request/served_model.h"

namespace synapse::request {

// What a model answers: text generation, embeddings, or rerank scores (a cross-encoder).
enum class ServedKind { kGeneration, kEmbedding, kRerank };
std::string_view served_kind_name(ServedKind kind);
// What the model file at `path` answers, from its metadata alone (no weights are read): a
// decoder generates, an encoder whose pooling is rank reranks, another encoder embeds.
Result<ServedKind> probe_served_kind(const std::string& path);

using KeepAlive = std::chrono::milliseconds;  // negative: forever

// Ollama's keep_alive: a duration ("5m", "30s", "1h30m", "250ms"), or a number of seconds
// ("300", "0" unloads at once, any negative number keeps the model). invalid_value otherwise.
Result<KeepAlive> parse_keep_alive(std::string_view text);

// A model the directory can load.
struct ModelSource {
  std::string name;  // what clients write in "model"; "name:tag" also matches "name" as "latest"
  std::vector<std::string> aliases;
  std::string ref;     // what the loader opens: a path, a store name or a digest
  std::string path;    // the model file (its metadata can be read without loading it)
  std::string digest;  // a stored model's SHA-256 (hex); empty for a file outside the store
  uint64_t bytes = 0;  // its file's size: the memory it needs, weights mapped in full
  ServedKind kind = ServedKind::kGeneration;
  int64_t created = 0;                  // unix seconds (when it was imported)
  std::optional<KeepAlive> keep_alive;  // this model's default; none: the directory's
};

// A loaded model: what requests see and whatever owns the model, its tokenizer and its Service
// (the loader's subclass). Destroying it stops its Service.
struct ModelInstance {
  virtual ~ModelInstance() = default;
  ServedModel served;
  ServedKind kind = ServedKind::kGeneration;  // what it answers, from the loaded model
  uint64_t bytes = 0;                         // memory it holds, counted against the budget
};

using ModelLoader =
    std::function<Result<std::unique_ptr<ModelInstance>>(const ModelSource& source)>;

struct DirectoryOptions {
  uint64_t max_memory_bytes = 0;        // 0: default_memory_budget()
  size_t max_loaded = 0;                // 0: no limit but memory
  KeepAlive keep_alive{5 * 60 * 1000};  // Ollama's default
  // How long a request waits for its model to load, or for a busy model to go idle so that its
  // memory can be given to the one asked for.
  std::chrono::milliseconds load_wait{10 * 60 * 1000};
};

// Three quarters of the machine's physical memory.
uint64_t default_memory_budget();

// A model as /v1/models, /api/tags, /api/ps and `synapse ps` show it.
struct ModelListing {
  std::string name;
  std::vector<std::string> aliases;
  ServedKind kind = ServedKind::kGeneration;
  std::string path;         // the model file; empty for a model given loaded
  std::string digest;       // a stored model's SHA-256 (hex), else empty
  uint64_t bytes = 0;       // the memory it holds (loaded) or needs: its file, and its KV cache
  uint64_t file_bytes = 0;  // its file's size
  int64_t created = 0;
  bool loaded = false;
  bool pinned = false;                // given loaded: never unloaded
  size_t requests = 0;                // in flight now
  double idle_s = 0.0;                // since its last request ended (loaded, none in flight)
  std::optional<int64_t> expires_at;  // unix seconds it unloads if still idle; none: never
  uint32_t n_ctx = 0;                 // loaded: its context, in tokens
  bool chat_template = false;         // loaded: it has one
  std::optional<serve::WorkerProcessInfo> worker;  // loaded with --isolate: its worker process
};

class ModelDirectory {
 public:
  ModelDirectory();
  ~ModelDirectory();  // unloads every model it loaded
  ModelDirectory(const ModelDirectory&) = delete;
  ModelDirectory& operator=(const ModelDirectory&) = delete;

  // A model already loaded and owned by the caller (who keeps it alive as long as the directory).
  void add(ModelHandle model, ServedKind kind = ServedKind::kGeneration);
  // Models loaded on demand through `loader`.
  void set_loader(ModelLoader loader, DirectoryOptions options);
  void add_source(ModelSource source);
  // Gives the model `name` one more name (a second store name of the same blob), so that both
  // names share one loaded instance. model_not_found if `name` is unknown.
  Status add_alias(std::string_view name, std::string alias);
  // Stops serving `name` (a name deleted from the store): an alias goes alone; a model's own
  // name takes the model out of the directory (no longer found or listed; requests in flight on
  // it finish, and it unloads after the last). model_not_found if unknown.
  Status remove_source(std::string_view name);

  // The model `name` names, loaded if it is not; an empty name picks the first model (clients of
  // llama-server and Ollama may omit it). `keep_alive` (a request's) replaces the model's.
  // Errors: model_not_found (field "model", naming what is served), the loader's, unavailable
  // (still loading, or no idle model could make room, after load_wait; shutting down),
  // limit_exceeded (the model alone needs more than the budget).
  Result<ModelHandle> find(std::string_view name,
                           std::optional<KeepAlive> keep_alive = std::nullopt) const;
  // Loads `name` now (a server's start-up, `synapse run`).
  Status load(std::string_view name) const { return find(name).status(); }
  // Unloads `name` as soon as it is idle (Ollama's keep_alive 0 without a prompt).
  Status unload(std::string_view name) const;

  std::vector<ModelListing> list() const;
  std::vector<api::ModelInfo> model_infos() const;
  // Every loaded model's service metrics, labelled with the model when there are several.
  std::string render_prometheus() const;
  // Stops loading and gives every loaded model's requests up to `grace` to finish (all models
  // at once), then cancels the rest.
  void shutdown(std::chrono::milliseconds grace);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace synapse::request
