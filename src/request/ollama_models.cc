// SPDX-License-Identifier: Apache-2.0
#include "request/ollama_models.h"

#include <nlohmann/json.hpp>

#include "store/model_store.h"

namespace synapse::request {
namespace {

using Json = nlohmann::ordered_json;

Status store_not_found(const std::string& name, const Status& s) {
  if (s.code() != ErrorCode::kNotFound && s.code() != ErrorCode::kModelNotFound) return s;
  return Status(ErrorCode::kModelNotFound, "model '" + name + "' not found",
                ErrorWhere{.field = "model"});
}

}  // namespace

Status ollama_pull(const ModelAdmin& admin, const std::string& model,
                   const std::function<bool(const std::string& line)>& emit) {
  const ModelPullEventFn on_event = [&emit](const ModelPullEvent& e) {
    Json line = {{"status", e.status}};
    if (!e.digest.empty()) line["digest"] = e.digest;
    if (e.total > 0) {
      line["total"] = e.total;
      line["completed"] = e.completed;
    }
    return emit(line.dump());
  };
  const Result<ModelPulled> pulled = pull_model(admin, {model, {}}, on_event);
  if (!pulled.ok()) return pulled.status();
  emit(R"({"status":"success"})");
  return ok_status();
}

Status ollama_delete(const ModelAdmin& admin, const std::string& model) {
  SYN_RETURN_IF_ERROR(check_model_admin(admin));
  SYN_ASSIGN_OR_RETURN(ModelStore store, ModelStore::open(admin.store_directory));
  Result<RemoveResult> removed = store.remove(model);
  if (!removed.ok()) return store_not_found(model, removed.status());
  // The name leaves the directory too; requests in flight on it finish first.
  (void)admin.directory->remove_source(model);
  return ok_status();
}

Status ollama_copy(const ModelAdmin& admin, const std::string& source,
                   const std::string& destination) {
  SYN_RETURN_IF_ERROR(check_model_admin(admin));
  SYN_RETURN_IF_ERROR(check_alias_name(destination).with_field("destination"));
  SYN_ASSIGN_OR_RETURN(ModelStore store, ModelStore::open(admin.store_directory));
  Result<StoredModel> stored = store.find(source);
  if (!stored.ok()) return store_not_found(source, stored.status());
  // Importing the stored blob under the new name only adds the name (same content, no copy).
  ImportOptions options;
  options.name = destination;
  SYN_ASSIGN_OR_RETURN(const ImportResult imported, store.import(stored->path, options));
  return serve_stored_model(admin, destination, imported.model);
}

}  // namespace synapse::request
