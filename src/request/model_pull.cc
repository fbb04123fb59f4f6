// SPDX-License-Identifier: Apache-2.0
#include "request/model_pull.h"

#include "api/api_error.h"
#include "api/responses.h"
#include "hub/pull.h"
#include "request/generation.h"
#include "store/model_store.h"

namespace synapse::request {
namespace {

bool listed(const ModelDirectory& directory, const std::string& name) {
  for (const ModelListing& m : directory.list()) {
    if (m.name == name) return true;
    for (const std::string& a : m.aliases) {
      if (a == name) return true;
    }
  }
  return false;
}

ModelPullStage stage_of(hub::PullStage stage) {
  switch (stage) {
    case hub::PullStage::kManifest:
      return ModelPullStage::kManifest;
    case hub::PullStage::kDownload:
      return ModelPullStage::kDownload;
    case hub::PullStage::kVerify:
      return ModelPullStage::kVerify;
    case hub::PullStage::kJoin:
      return ModelPullStage::kJoin;
    case hub::PullStage::kImport:
    case hub::PullStage::kSuccess:  // never passed on: success is the result
      break;
  }
  return ModelPullStage::kImport;
}

// The word /v1/models/pull's progress objects carry for a stage.
std::string_view stage_word(ModelPullStage stage) {
  switch (stage) {
    case ModelPullStage::kManifest:
      return "manifest";
    case ModelPullStage::kDownload:
      return "downloading";
    case ModelPullStage::kVerify:
      return "verifying";
    case ModelPullStage::kJoin:
      return "joining";
    case ModelPullStage::kImport:
      break;
  }
  return "importing";
}

}  // namespace

Status check_model_admin(const ModelAdmin& admin) {
  if (admin.directory != nullptr) return ok_status();
  return Status(ErrorCode::kUnsupported, "this server manages no model store");
}

Status serve_stored_model(const ModelAdmin& admin, const std::string& name,
                          const StoredModel& stored) {
  if (listed(*admin.directory, name)) return ok_status();
  // Another name of the same blob already served: one more name of that model, so the two names
  // share one loaded instance (and count once against the memory budget).
  SYN_ASSIGN_OR_RETURN(ModelStore store, ModelStore::open(admin.store_directory));
  SYN_ASSIGN_OR_RETURN(const StoredModel current, store.find(stored.digest));
  for (const std::string& other : current.aliases) {
    if (other != name && listed(*admin.directory, other)) {
      return admin.directory->add_alias(other, name);
    }
  }
  ModelSource source;
  source.name = name;
  source.ref = name;
  source.path = stored.path;
  source.digest = stored.digest;
  source.bytes = stored.bytes;
  source.created = stored.imported_at;
  SYN_ASSIGN_OR_RETURN(source.kind, probe_served_kind(stored.path));
  admin.directory->add_source(std::move(source));
  return ok_status();
}

Result<ModelPulled> pull_model(const ModelAdmin& admin, const ModelPullRequest& request,
                               const ModelPullEventFn& on_event) {
  SYN_RETURN_IF_ERROR(check_model_admin(admin));
  bool gone = false;
  const hub::PullProgressFn progress = [&](const hub::PullProgress& p) {
    if (p.stage == hub::PullStage::kSuccess || gone) return;  // success: once servable
    gone = !on_event(
        {stage_of(p.stage), p.status, p.digest, p.file, p.total, p.total > 0 ? p.completed : 0});
  };
  hub::PullRequest pull;
  pull.model = request.model;
  pull.file = request.file;
  pull.store_directory = admin.store_directory;
  SYN_ASSIGN_OR_RETURN(const hub::PullResult pulled,
                       hub::pull_model(pull, progress, [&gone] { return gone; }));
  SYN_RETURN_IF_ERROR(serve_stored_model(admin, pulled.name, pulled.model));
  // Clients ask for the model by the name they pulled; the store may name it with a tag.
  if (pulled.name != request.model) {
    SYN_ASSIGN_OR_RETURN(ModelStore store, ModelStore::open(admin.store_directory));
    if (store.find(request.model).ok()) {
      SYN_RETURN_IF_ERROR(serve_stored_model(admin, request.model, pulled.model));
    }
  }
  return ModelPulled{pulled.name, pulled.model.digest, pulled.bytes, pulled.source};
}

ModelPullStream::ModelPullStream(const ModelAdmin& admin, ModelPullRequest request) {
  worker_ = std::thread([this, &admin, request = std::move(request)] {
    Result<ModelPulled> result = pull_model(admin, request, [this](const ModelPullEvent& e) {
      std::lock_guard lock(mutex_);
      if (abandoned_) return false;
      // A slow reader gets the latest byte count of a download, not every one.
      if (!events_.empty() && e.stage == ModelPullStage::kDownload &&
          events_.back().stage == ModelPullStage::kDownload && events_.back().file == e.file) {
        events_.back() = e;
      } else {
        events_.push_back(e);
      }
      changed_.notify_all();
      return true;
    });
    std::lock_guard lock(mutex_);
    result_ = std::move(result);
    finished_ = true;
    changed_.notify_all();
  });
}

ModelPullStream::~ModelPullStream() {
  abandon();
  if (worker_.joinable()) worker_.join();
}

void ModelPullStream::abandon() {
  std::lock_guard lock(mutex_);
  abandoned_ = true;
}

bool ModelPullStream::next(std::string& out) {
  std::unique_lock lock(mutex_);
  if (ended_) return false;
  // Back within a poll interval even without news, so the caller can see a client gone.
  changed_.wait_for(lock, kPollInterval, [this] { return !events_.empty() || finished_; });
  for (const ModelPullEvent& e : events_) {
    out += api::sse_event(
        api::model_pull_progress({stage_word(e.stage), e.file, e.digest, e.total, e.completed}));
  }
  events_.clear();
  if (!finished_) return true;
  if (result_.ok()) {
    out += api::sse_event(
        api::model_pull_done({result_->name, result_->digest, result_->bytes, result_->source}));
  } else {
    // Headers are gone; OpenAI streams an error as an event of its own.
    out += api::sse_event(api::error_body(api::api_error_from_status(result_.status())));
  }
  out += api::sse_done();
  ended_ = true;
  return false;
}

}  // namespace synapse::request
