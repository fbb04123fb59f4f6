// SPDX-License-Identifier: Apache-2.0
#include "store/model_ref.h"

#include <filesystem>

#include "base/echo.h"
#include "format/model_file.h"

namespace synapse {
namespace {

bool looks_like_path(std::string_view ref) {
  return ref.find('/') != std::string_view::npos || ref.ends_with(".gguf") ||
         ref.ends_with(".synapse");
}

// A path that exists but is no model file: said plainly, never looked up as a store name (which
// answered "no model ... in the store") and never opened (opening a FIFO blocks).
Status not_a_model_file(const std::string& path, std::filesystem::file_type type) {
  const std::string what = type == std::filesystem::file_type::directory
                               ? "is a directory, not a model file"
                               : "is not a regular file (a FIFO, socket or device); a model must "
                                 "be a GGUF or package file";
  return Status(ErrorCode::kInvalidArgument, "'" + clip_for_echo(path) + "' " + what,
                ErrorWhere{.path = path, .field = "model"});
}

Result<ResolvedModel> leased(ModelStore& store, std::string_view ref, std::string label) {
  SYN_ASSIGN_OR_RETURN(ModelLease lease, store.acquire_lease(ref));
  ResolvedModel out;
  out.path = lease.path();
  out.label = std::move(label) + " (sha256:" + lease.digest().substr(0, 12) + ")";
  out.lease = std::move(lease);
  return out;
}

}  // namespace

Result<ResolvedModel> resolve_model(std::string_view ref, const ResolveOptions& options) {
  const std::string path(ref);
  std::error_code error;
  // status() is stat(2): it looks at the entry without opening it.
  const std::filesystem::file_status entry = std::filesystem::status(path, error);
  const bool exists_not_regular =
      !error && std::filesystem::exists(entry) && !std::filesystem::is_regular_file(entry);
  if (exists_not_regular && looks_like_path(ref)) return not_a_model_file(path, entry.type());
  if (!error && std::filesystem::is_regular_file(entry)) {
    // Only the magic is read here: whoever opens the file reports what is wrong with it.
    if (sniff_model_format(path) != "gguf" || !options.prepare_gguf) {
      return ResolvedModel{path, std::nullopt, path};
    }
    SYN_ASSIGN_OR_RETURN(ModelStore store, ModelStore::open(options.store_directory));
    ImportOptions import;
    import.created_by = options.created_by;
    import.keep_existing_alias = true;
    bool announced = false;
    const std::string name = std::filesystem::path(path).filename().string();
    import.progress = [&](std::string_view stage, uint64_t done, uint64_t total) {
      if (stage == "converting" && !announced && options.notice) {
        options.notice("preparing " + name + " (once)...");
    announced = true;
  }
  if (options.progress) options.progress(stage, done, total);
};
SYN_ASSIGN_OR_RETURN(const ImportResult imported, store.import(path, import));
return leased(store, imported.model.digest, imported.name);
}  // namespace synapse
if (looks_like_path(ref) && !std::filesystem::exists(path, error)) {
  // A namespaced store name ("hf.co/org/repo:Q4_K_M") looks like a path: asked of the store, and
  // reported as a missing file when the store has no such name either.
  const Status no_file(ErrorCode::kNotFound, "no such file", ErrorWhere{.path = path});
  if (!check_alias_name(ref).ok()) return no_file;
  SYN_ASSIGN_OR_RETURN(ModelStore store, ModelStore::open(options.store_directory));
  Result<ResolvedModel> stored = leased(store, ref, path);
  if (!stored.ok() && stored.status().code() == ErrorCode::kNotFound) return no_file;
  return stored;
}
SYN_ASSIGN_OR_RETURN(ModelStore store, ModelStore::open(options.store_directory));
Result<ResolvedModel> stored = leased(store, ref, path);
// A bare name that is a directory (or FIFO) here and no stored model: that entry was meant.
if (!stored.ok() && stored.status().code() == ErrorCode::kNotFound && exists_not_regular) {
  return not_a_model_file(path, entry.type());
}
return stored;
}

}  // namespace synapse
