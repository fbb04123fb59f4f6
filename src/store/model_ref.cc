// SPDX-License-Identifier: Apache-2.0
#include "store/model_ref.h"

#include <filesystem>

#include "format/model_file.h"

namespace synapse {
namespace {

bool looks_like_path(std::string_view ref) {
  return ref.find('/') != std::string_view::npos || ref.ends_with(".gguf") ||
         ref.ends_with(".synapse");
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
  if (std::filesystem::is_regular_file(path, error)) {
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
  return Status(ErrorCode::kNotFound, "no such file", ErrorWhere{.path = path});
}
SYN_ASSIGN_OR_RETURN(ModelStore store, ModelStore::open(options.store_directory));
return leased(store, ref, path);
}

}  // namespace synapse
