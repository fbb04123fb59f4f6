// SPDX-License-Identifier: Apache-2.0
// The server's one pull pipeline, dialect-neutral: a hub reference pulled into the model store
// (hub::pull_model) and made servable in the model directory at once, its progress given as
// typed events to a callback that returns false to cancel. Ollama's /api/pull
// (ollama_models.h) renders the events as NDJSON status objects, /v1/models/pull
// (ModelPullStream, api/model_pull.h) as server-sent events.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "api/model_pull.h"
#include "base/status.h"
#include "request/model_directory.h"

namespace synapse {
struct StoredModel;
}

namespace synapse::request {

// What the model-management routes work on; the server has them only when it serves a store.
struct ModelAdmin {
  std::string store_directory;          // empty: default_store_directory()
  ModelDirectory* directory = nullptr;  // not owned; the directory the server answers from
};

enum class ModelPullStage { kManifest, kDownload, kVerify, kJoin, kImport };

struct ModelPullEvent {
  ModelPullStage stage = ModelPullStage::kManifest;
  std::string status;  // the hub's words, as Ollama shows them ("pulling manifest", ...)
  std::string digest;  // "sha256:HEX" of the file worked on, else empty
  std::string file;    // its repository path, else empty
  uint64_t total = 0;  // bytes; 0 when the step is not counted
  uint64_t completed = 0;
};
// False cancels the pull (the client went away); it is not called again afterwards.
using ModelPullEventFn = std::function<bool(const ModelPullEvent&)>;

struct ModelPullRequest {
  std::string model;  // "hf.co/ORG/REPO[:TAG]", "ORG/REPO", ...
  std::string file;   // an exact repository file instead of the tag's choice
};

struct ModelPulled {
  std::string name;    // the store name it is served by ("hf.co/ORG/REPO:TAG")
  std::string digest;  // the store's digest
  uint64_t bytes = 0;  // of the GGUF(s) fetched or reused
  std::string source;  // "download", "huggingface-cache", "store"
};

// Pulls into the store and adds the model to the directory, under its store name and, when the
// store also knows it by the name asked for, that name too. Errors: unsupported (no store), the
// hub's (hub_not_found, hub_unauthorized, hub_offline, checksum_mismatch, ...), the store's,
// cancelled.
Result<ModelPulled> pull_model(const ModelAdmin& admin, const ModelPullRequest& request,
                               const ModelPullEventFn& on_event);

// The stored model `name` as a source of the directory (unless it already is one; another name of
// the same blob already served makes it an alias of that model).
Status serve_stored_model(const ModelAdmin& admin, const std::string& name,
                          const StoredModel& stored);
// unsupported unless the admin has a directory.
Status check_model_admin(const ModelAdmin& admin);

// A pull run on its own thread, yielding server-sent events for /v1/models/pull: one
// "model.pull.progress" per step (a download's byte counts coalesced while the client reads),
// then "model.pull.done" or an {"error"} event, then [DONE]. The shape server/http_reply.h's
// send_stream pumps. `admin` must outlive the stream.
class ModelPullStream {
 public:
  ModelPullStream(const ModelAdmin& admin, ModelPullRequest request);
  ~ModelPullStream();  // cancels an unfinished pull and waits for its thread
  ModelPullStream(const ModelPullStream&) = delete;
  ModelPullStream& operator=(const ModelPullStream&) = delete;

  // Waits for the next events and appends them to `out`; false once the stream has ended (its
  // last event and [DONE] are in `out`).
  bool next(std::string& out);
  // The caller has gone: cancels the pull unless it already ended.
  void abandon();

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<ModelPullEvent> events_;
  bool abandoned_ = false;
  bool finished_ = false;
  bool ended_ = false;
  Result<ModelPulled> result_ = Status(ErrorCode::kCancelled, "not finished");
  std::thread worker_;
};

}  // namespace synapse::request
