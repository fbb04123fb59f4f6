// SPDX-License-Identifier: Apache-2.0
// The wire format of POST /v1/models/pull, Synapse's OpenAI-style route to the pull Ollama's
// /api/pull also runs: the request body ({"model", "file", "stream"}) parsed through the bounded
// JSON entry point, and the objects answered: one "model.pull.progress" per step (streamed as
// server-sent events), then "model.pull.done". Errors use OpenAI's shape (api_error.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "api/requests.h"
#include "base/status.h"

namespace synapse::api {

struct ModelPullRequest {
  std::string model;   // "hf.co/ORG/REPO[:TAG]", "ORG/REPO", ...; required, not empty
  std::string file;    // an exact repository file instead of the tag's choice; empty: none
  bool stream = true;  // progress as server-sent events; false: one object at the end
};

// Errors: request_too_large (413), invalid_json, missing_parameter, invalid_type, invalid_value.
Result<ModelPullRequest> parse_model_pull_request(std::string_view body,
                                                  const RequestLimits& limits = {});

struct ModelPullProgress {
  std::string_view status;  // "manifest", "downloading", "verifying", "joining", "importing"
  std::string_view file;    // the repository file worked on, or empty
  std::string_view digest;  // "sha256:HEX" of it, or empty
  uint64_t total = 0;       // bytes; 0 when the step is not counted (then no byte fields)
  uint64_t completed = 0;
};

// {"object":"model.pull.progress","status",["file"],["digest"],["total","completed"]}
std::string model_pull_progress(const ModelPullProgress& progress);

struct ModelPullDone {
  std::string_view model;   // the name it is served by (as /v1/models lists it)
  std::string_view digest;  // the store's digest of the model
  uint64_t bytes = 0;       // what was fetched or reused
  std::string_view source;  // "download", "huggingface-cache" or "store" (pulled before)
};

// {"object":"model.pull.done","status":"success","model","digest","bytes","source"}
std::string model_pull_done(const ModelPullDone& done);

}  // namespace synapse::api
