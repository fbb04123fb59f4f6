// SPDX-License-Identifier: Apache-2.0
// Ollama's model management without HTTP: /api/pull (the pull pipeline of model_pull.h, its
// progress events as Ollama's NDJSON status objects), /api/delete and /api/copy over the model
// store, the model directory kept in step (a pulled or copied model is servable at once).
#pragma once

#include <functional>
#include <string>

#include "base/status.h"
#include "request/model_directory.h"
#include "request/model_pull.h"

namespace synapse::request {

// Pulls `model` ("hf.co/ORG/REPO[:TAG]", ...) into the store and adds it to the directory.
// Each progress object is passed to `emit` as one line without its newline ({"status"}, with
// "digest", "total", "completed" while a file downloads), the last {"status":"success"};
// `emit` returning false (the client went away) cancels the pull. Errors: the hub's
// (hub_not_found, hub_unauthorized, hub_offline, checksum_mismatch, ...), the store's.
Status ollama_pull(const ModelAdmin& admin, const std::string& model,
                   const std::function<bool(const std::string& line)>& emit);

// Removes the store name `model` (its blob once no name is left) and unloads it when idle.
// Errors: model_not_found.
Status ollama_delete(const ModelAdmin& admin, const std::string& model);

// Gives the stored model `source` a second name, servable at once. Errors: model_not_found.
Status ollama_copy(const ModelAdmin& admin, const std::string& source,
                   const std::string& destination);

}  // namespace synapse::request
