// SPDX-License-Identifier: Apache-2.0
#include "jobs/submission.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <unordered_set>
#include <utility>

#include "base/echo.h"
#include "base/hash.h"
#include "base/json_body.h"

namespace synapse::jobs {
namespace {

using nlohmann::json;

// nlohmann's dump() and destructor recurse per nesting level; the one JSON entry point bounds the
// depth before a value is built.
constexpr int kMaxJsonDepth = 64;

// Through base/json_body.h: depth, duplicate keys and overflowing numbers are invalid_json. Sizes
// are checked by the callers first, with their own limits and codes.
Status parse_json(std::string_view text, JsonShape shape, std::string_view what, json& out) {
  const JsonLimits limits{.max_bytes = text.size(), .max_depth = kMaxJsonDepth};
  SYN_ASSIGN_OR_RETURN(out, parse_json_text<json>(text, limits, shape, what));
  return ok_status();
}

Status field_error(ErrorCode code, std::string message, std::string_view field) {
  return Status(code, std::move(message), ErrorWhere{.field = std::string(field)});
}

// Validates one request object. `method` is optional in the JSON form (POST is implied).
Result<JobRequest> parse_request(const json& value, bool method_required,
                                 const SubmissionLimits& limits) {
  if (!value.is_object()) {
    return Status(ErrorCode::kInvalidType, "a request must be a JSON object");
  }
  const auto custom_id = value.find("custom_id");
  if (custom_id == value.end()) {
    return field_error(ErrorCode::kMissingParameter, "custom_id is missing", "custom_id");
  }
  if (!custom_id->is_string() || custom_id->get_ref<const std::string&>().empty()) {
    return field_error(custom_id->is_string() ? ErrorCode::kInvalidValue : ErrorCode::kInvalidType,
                       "custom_id must be a non-empty string", "custom_id");
  }
  if (static_cast<int64_t>(custom_id->get_ref<const std::string&>().size()) >
      limits.max_custom_id_bytes) {
    return field_error(ErrorCode::kLimitExceeded, "custom_id is too long", "custom_id");
  }
  const auto method = value.find("method");
  if (method == value.end()) {
    if (method_required) {
      return field_error(ErrorCode::kMissingParameter, "method is missing", "method");
    }
  } else if (!method->is_string() || method->get_ref<const std::string&>() != "POST") {
    return field_error(method->is_string() ? ErrorCode::kInvalidValue : ErrorCode::kInvalidType,
                       "method must be \"POST\"", "method");
  }
  const auto url = value.find("url");
  if (url == value.end()) return field_error(ErrorCode::kMissingParameter, "url is missing", "url");
  if (!url->is_string()) return field_error(ErrorCode::kInvalidType, "url must be a string", "url");
  if (!limits.item_urls.empty() &&
      std::find(limits.item_urls.begin(), limits.item_urls.end(),
                url->get_ref<const std::string&>()) == limits.item_urls.end()) {
    std::string urls;
    for (const std::string& u : limits.item_urls) urls += (urls.empty() ? "" : ", ") + u;
    return field_error(ErrorCode::kInvalidValue, "url must be one of " + urls, "url");
  }
  const auto body = value.find("body");
  if (body == value.end()) {
    return field_error(ErrorCode::kMissingParameter, "body is missing", "body");
  }
  if (!body->is_object()) {
    return field_error(ErrorCode::kInvalidType, "body must be a JSON object", "body");
  }
  return JobRequest{.custom_id = custom_id->get<std::string>(),
                    .url = url->get<std::string>(),
                    .body = body->dump()};  // keys sorted, no spaces: canonical
}

// Collects requests and per-line errors, enforcing uniqueness and the request limit.
class SubmissionBuilder {
 public:
  SubmissionBuilder(Submission& submission, const SubmissionLimits& limits)
      : submission_(submission), limits_(limits) {}

  void add_error(int64_t line, const Status& status) {
    ++submission_.invalid_lines;
    if (static_cast<int64_t>(submission_.line_errors.size()) >= limits_.max_line_errors) return;
    std::string message = status.message();
    if (!status.where().field.empty()) message += " (field " + status.where().field + ")";
    submission_.line_errors.push_back(
        LineError{.line = line, .code = status.code(), .message = std::move(message)});
  }

  void add(int64_t line, const json& value, bool method_required) {
    Result<JobRequest> request = parse_request(value, method_required, limits_);
    if (!request.ok()) return add_error(line, request.status());
    if (!custom_ids_.insert(request->custom_id).second) {
      return add_error(line,
                       Status(ErrorCode::kDuplicateCustomId,
                              "custom_id '" + clip_for_echo(request->custom_id) + "' repeats"));
    }
    if (static_cast<int64_t>(submission_.requests.size()) >= limits_.max_requests) {
      return add_error(line, Status(ErrorCode::kLimitExceeded,
                                    "more than " + std::to_string(limits_.max_requests) +
                                        " requests in one job"));
    }
    request->line = line;
    submission_.requests.push_back(std::move(request).value());
  }

  Status finish() const {
    if (submission_.requests.empty()) {
      std::string message = "the submission has no valid request";
      if (!submission_.line_errors.empty()) {
        const LineError& first = submission_.line_errors.front();
        message += "; line " + std::to_string(first.line) + ": " +
                   std::string(error_code_name(first.code)) + ": " + first.message;
      }
      return Status(ErrorCode::kInvalidArgument, std::move(message));
    }
    return ok_status();
  }

 private:
  Submission& submission_;
  const SubmissionLimits& limits_;
  std::unordered_set<std::string> custom_ids_;
};

Status check_input_size(std::string_view text, const SubmissionLimits& limits) {
  if (static_cast<int64_t>(text.size()) > limits.max_input_bytes) {
    return Status(ErrorCode::kLimitExceeded, "the submission is larger than " +
                                                 std::to_string(limits.max_input_bytes) + " bytes");
  }
  return ok_status();
}

// A TTL in seconds from the JSON form, as milliseconds.
Status read_ttl(const json& root, std::string_view key, std::optional<int64_t>& out) {
  const auto it = root.find(key);
  if (it == root.end()) return ok_status();
  constexpr int64_t kMaxTtlSeconds = int64_t{10} * 365 * 24 * 3600;
  if (!it->is_number_integer() || it->get<int64_t>() <= 0 || it->get<int64_t>() > kMaxTtlSeconds) {
    return field_error(it->is_number_integer() ? ErrorCode::kInvalidValue : ErrorCode::kInvalidType,
                       std::string(key) + " must be a positive number of seconds", key);
  }
  out = it->get<int64_t>() * 1000;
  return ok_status();
}

}  // namespace

Result<Submission> parse_jsonl_submission(std::string_view text, JobClass job_class,
                                          const SubmissionLimits& limits) {
  SYN_RETURN_IF_ERROR(check_input_size(text, limits));
  Submission submission;
  submission.job_class = job_class;
  SubmissionBuilder builder(submission, limits);
  int64_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (static_cast<int64_t>(line.size()) > limits.max_line_bytes) {
      builder.add_error(line_number, Status(ErrorCode::kLimitExceeded,
                                            "line longer than " +
                                                std::to_string(limits.max_line_bytes) + " bytes"));
      continue;
    }
    json value;
    Status parsed = parse_json(line, JsonShape::kAny, "the line", value);
    if (!parsed.ok()) {
      builder.add_error(line_number, parsed);
      continue;
    }
    builder.add(line_number, value, /*method_required=*/true);
  }
  SYN_RETURN_IF_ERROR(builder.finish());
  return submission;
}

Result<Submission> parse_json_submission(std::string_view text, const SubmissionLimits& limits) {
  SYN_RETURN_IF_ERROR(check_input_size(text, limits));
  json root;
  SYN_RETURN_IF_ERROR(parse_json(text, JsonShape::kObject, "the body", root));
  Submission submission;
  if (const auto job_class = root.find("class"); job_class != root.end()) {
    const std::optional<JobClass> parsed =
        job_class->is_string() ? job_class_from_name(job_class->get_ref<const std::string&>())
                               : std::nullopt;
    if (!parsed) {
      return field_error(
          job_class->is_string() ? ErrorCode::kInvalidValue : ErrorCode::kInvalidType,
          "class must be \"batch\" or \"background\"", "class");
    }
    submission.job_class = *parsed;
  }
  SYN_RETURN_IF_ERROR(read_ttl(root, "execution_ttl_s", submission.execution_ttl_ms));
  SYN_RETURN_IF_ERROR(read_ttl(root, "retention_ttl_s", submission.retention_ttl_ms));
  const auto requests = root.find("requests");
  if (requests == root.end()) {
    return field_error(ErrorCode::kMissingParameter, "requests is missing", "requests");
  }
  if (!requests->is_array()) {
    return field_error(ErrorCode::kInvalidType, "requests must be an array", "requests");
  }
  SubmissionBuilder builder(submission, limits);
  int64_t index = 0;
  for (const json& value : *requests) {
    builder.add(++index, value, /*method_required=*/false);
  }
  SYN_RETURN_IF_ERROR(builder.finish());
  return submission;
}

Status restrict_to_endpoint(Submission& submission, std::string_view endpoint,
                            const SubmissionLimits& limits) {
  std::vector<JobRequest> kept;
  for (JobRequest& request : submission.requests) {
    if (request.url == endpoint) {
      kept.push_back(std::move(request));
      continue;
    }
    ++submission.invalid_lines;
    if (static_cast<int64_t>(submission.line_errors.size()) < limits.max_line_errors) {
      submission.line_errors.push_back(LineError{
          .line = request.line,
          .code = ErrorCode::kInvalidValue,
          .message = "url " + clip_for_echo(request.url) + " differs from the batch's endpoint " +
                     std::string(endpoint) + " (field url)"});
    }
  }
  const bool none_left = kept.empty();
  submission.requests = std::move(kept);
  std::stable_sort(submission.line_errors.begin(), submission.line_errors.end(),
                   [](const LineError& a, const LineError& b) { return a.line < b.line; });
  if (none_left) {
    return Status(ErrorCode::kInvalidArgument,
                  "no valid line of the input targets the endpoint " + std::string(endpoint));
  }
  return ok_status();
}

std::string submission_digest(const Submission& submission) {
  // Length-prefixed fields, so that no two different submissions serialize alike.
  Sha256Hasher hasher;
  auto add = [&hasher](std::string_view field) {
    const std::string length = std::to_string(field.size()) + ":";
    hasher.update(as_bytes(length));
    hasher.update(as_bytes(field));
  };
  add("synapse-jobs-v1");
  add(job_class_name(submission.job_class));
  for (const JobRequest& request : submission.requests) {
    add(request.custom_id);
    add(request.url);
    add(request.body);
  }
  const Sha256Digest digest = hasher.finish();
  return to_hex(digest);
}

}  // namespace synapse::jobs
