// SPDX-License-Identifier: Apache-2.0
#include "request/ollama_models.h"

#include <nlohmann/json.hpp>

#include "hub/pull.h"
#include "store/model_store.h"

namespace synapse::request {
namespace {

using Json = nlohmann::ordered_json;

Status no_store(const ModelAdmin& admin) {
  if (admin.directory != nullptr) return ok_status();
  return Status(ErrorCode::kUnsupported, "this server manages no model store");
}

bool listed(const ModelDirectory& directory, const std::string& name) {
  for (const ModelListing& m : directory.list()) {
    if (m.name == name) return true;
    for (const std::string& a : m.aliases) {
      if (a == name) return true;
    }
  }
  return false;
}

// The stored model `name` as a source of the directory (unless it already is one).
Status add_to_directory(const ModelAdmin& admin, const std::string& name,
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

Status store_not_found(const std::string& name, const Status& s) {
  if (s.code() != ErrorCode::kNotFound && s.code() != ErrorCode::kModelNotFound) return s;
  return Status(ErrorCode::kModelNotFound, "model '" + name + "' not found",
                ErrorWhere{.field = "model"});
}

}  // namespace

Status ollama_pull(const ModelAdmin& admin, const std::string& model,
                   const std::function<bool(const std::string& line)>& emit) {
  SYN_RETURN_IF_ERROR(no_store(admin));
  bool gone = false;
  const hub::PullProgressFn progress = [&](const hub::PullProgress& p) {
    if (p.status == "success" || gone) return;  // sent once the model is servable
    Json line = {{"status", p.status}};
    if (!p.digest.empty()) line["digest"] = p.digest;
    if (p.total > 0) {
      line["total"] = p.total;
      line["completed"] = p.completed;
    }
    gone = !emit(line.dump());
  };
  hub::PullRequest request;
  request.model = model;
  request.store_directory = admin.store_directory;
  SYN_ASSIGN_OR_RETURN(const hub::PullResult pulled,
                       hub::pull_model(request, progress, [&gone] { return gone; }));
  SYN_RETURN_IF_ERROR(add_to_directory(admin, pulled.name, pulled.model));
  // Clients ask for the model by the name they pulled; the store may name it with a tag.
  if (pulled.name != model) {
    SYN_ASSIGN_OR_RETURN(ModelStore store, ModelStore::open(admin.store_directory));
    if (store.find(model).ok()) SYN_RETURN_IF_ERROR(add_to_directory(admin, model, pulled.model));
  }
  emit(R"({"status":"success"})");
  return ok_status();
}

Status ollama_delete(const ModelAdmin& admin, const std::string& model) {
  SYN_RETURN_IF_ERROR(no_store(admin));
  SYN_ASSIGN_OR_RETURN(ModelStore store, ModelStore::open(admin.store_directory));
  Result<RemoveResult> removed = store.remove(model);
  if (!removed.ok()) return store_not_found(model, removed.status());
  // The name leaves the directory too; requests in flight on it finish first.
  (void)admin.directory->remove_source(model);
  return ok_status();
}

Status ollama_copy(const ModelAdmin& admin, const std::string& source,
                   const std::string& destination) {
  SYN_RETURN_IF_ERROR(no_store(admin));
  SYN_RETURN_IF_ERROR(check_alias_name(destination).with_field("destination"));
  SYN_ASSIGN_OR_RETURN(ModelStore store, ModelStore::open(admin.store_directory));
  Result<StoredModel> stored = store.find(source);
  if (!stored.ok()) return store_not_found(source, stored.status());
  // Importing the stored blob under the new name only adds the name (same content, no copy).
  ImportOptions options;
  options.name = destination;
  SYN_ASSIGN_OR_RETURN(const ImportResult imported, store.import(stored->path, options));
  return add_to_directory(admin, destination, imported.model);
}

}  // namespace synapse::request
