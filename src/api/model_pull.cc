// SPDX-License-Identifier: Apache-2.0
#include "api/model_pull.h"

#include <nlohmann/json.hpp>

#include "base/json_body.h"

namespace synapse::api {
namespace {

using Json = nlohmann::ordered_json;

Status field_error(ErrorCode code, const std::string& field, const std::string& message) {
  return Status(code, message, ErrorWhere{.field = field});
}

// The value of `key`, or nullptr when absent or null (OpenAI treats null as "not given").
const Json* find(const Json& body, std::string_view key) {
  const auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

Status read_string(const Json& body, const char* key, std::string& out) {
  const Json* v = find(body, key);
  if (v == nullptr) return ok_status();
  if (!v->is_string()) return field_error(ErrorCode::kInvalidType, key, "must be a string");
  out = v->get<std::string>();
  if (out.empty()) return field_error(ErrorCode::kInvalidValue, key, "must not be empty");
  return ok_status();
}

}  // namespace

Result<ModelPullRequest> parse_model_pull_request(std::string_view body,
                                                  const RequestLimits& limits) {
  SYN_ASSIGN_OR_RETURN(const Json json,
                       parse_json_body(body, JsonLimits{.max_bytes = limits.max_body_bytes,
                                                        .max_depth = limits.max_json_depth}));
  ModelPullRequest request;
  if (find(json, "model") == nullptr) {
    return field_error(ErrorCode::kMissingParameter, "model",
                       "the model to pull is required (\"hf.co/ORG/REPO[:TAG]\")");
  }
  SYN_RETURN_IF_ERROR(read_string(json, "model", request.model));
  SYN_RETURN_IF_ERROR(read_string(json, "file", request.file));
  if (const Json* stream = find(json, "stream")) {
    if (!stream->is_boolean()) {
      return field_error(ErrorCode::kInvalidType, "stream", "must be a boolean");
    }
    request.stream = stream->get<bool>();
  }
  return request;
}

std::string model_pull_progress(const ModelPullProgress& progress) {
  Json j = {{"object", "model.pull.progress"}, {"status", progress.status}};
  if (!progress.file.empty()) j["file"] = progress.file;
  if (!progress.digest.empty()) j["digest"] = progress.digest;
  if (progress.total > 0) {
    j["total"] = progress.total;
    j["completed"] = progress.completed;
  }
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string model_pull_done(const ModelPullDone& done) {
  return Json({{"object", "model.pull.done"},
               {"status", "success"},
               {"model", done.model},
               {"digest", done.digest},
               {"bytes", done.bytes},
               {"source", done.source}})
      .dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace synapse::api
