// SPDX-License-Identifier: Apache-2.0
// What a command means by "a model": a package path (used in place), a GGUF path (used as it is,
// or first prepared into the store for commands that execute models), or a store name or digest
// (leased for as long as the command runs). A path to an existing file wins over a store name.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "store/model_store.h"

namespace synapse {

struct ResolvedModel {
  std::string path;                 // the file to open
  std::optional<ModelLease> lease;  // held for stored models
  std::string label;                // for messages: the path, or "name (sha256:abcdef123456)"
};

struct ResolveOptions {
  std::string store_directory;  // empty: default_store_directory()
  // Import a raw GGUF into the store and run the package (commands that execute models). It is
  // visible: notice() receives "preparing NAME (once)..." when a conversion starts.
  bool prepare_gguf = false;
  std::function<void(std::string_view message)> notice;
  // Progress of the import (see ImportOptions).
  std::function<void(std::string_view stage, uint64_t done, uint64_t total)> progress;
  std::string created_by = "synapse";
};

Result<ResolvedModel> resolve_model(std::string_view ref, const ResolveOptions& options = {});

}  // namespace synapse
