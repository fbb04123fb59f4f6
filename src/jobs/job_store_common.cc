// SPDX-License-Identifier: Apache-2.0
#include "jobs/job_store_common.h"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <random>

#include "base/echo.h"
#include "base/hash.h"

namespace synapse::jobs {
namespace {

std::string random_hex_id(std::string_view prefix) {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  std::array<uint8_t, 12> bytes{};
  for (uint8_t& byte : bytes) byte = static_cast<uint8_t>(generator());
  return std::string(prefix) + to_hex(bytes);
}

bool is_json_object(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{' &&
         nlohmann::json::accept(text.begin(), text.end());
}

}  // namespace

std::string new_job_id() { return random_hex_id("job_"); }
std::string new_file_id() { return random_hex_id("file-"); }

Status check_submission(const Submission& submission,
                        std::optional<std::string_view> idempotency_key) {
  if (submission.requests.empty()) {
    return Status(ErrorCode::kInvalidArgument, "a job needs at least one valid request");
  }
  if (idempotency_key && (idempotency_key->empty() || idempotency_key->size() > 255)) {
    return Status(ErrorCode::kInvalidValue, "an idempotency key has 1 to 255 bytes",
                  ErrorWhere{.field = "Idempotency-Key"});
  }
  return ok_status();
}

int64_t invalid_line_count(const Submission& submission) {
  return std::max(submission.invalid_lines, static_cast<int64_t>(submission.line_errors.size()));
}

std::string line_errors_json(const std::vector<LineError>& errors) {
  nlohmann::json array = nlohmann::json::array();
  for (const LineError& error : errors) {
    array.push_back({{"line", error.line},
                     {"code", std::string(error_code_name(error.code))},
                     {"message", error.message}});
  }
  return array.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<LineError> parse_line_errors(std::string_view json) {
  std::vector<LineError> errors;
  const nlohmann::json parsed = nlohmann::json::parse(json, nullptr, false);
  if (!parsed.is_array()) return errors;
  for (const nlohmann::json& error : parsed) {
    if (!error.is_object() || !error.value("line", nlohmann::json()).is_number_integer()) {
      continue;
    }
    errors.push_back(LineError{
        .line = error["line"].get<int64_t>(),
        .code = error_code_from_name(error.value("code", "")).value_or(ErrorCode::kInternal),
        .message = error.value("message", "")});
  }
  return errors;
}

Result<std::vector<const ItemOutcome*>> sorted_outcomes(const std::vector<ItemOutcome>& outcomes) {
  std::vector<const ItemOutcome*> sorted;
  sorted.reserve(outcomes.size());
  for (const ItemOutcome& outcome : outcomes) {
    if (outcome.error == ErrorCode::kOk && !is_json_object(outcome.response_json)) {
      return Status(
          ErrorCode::kInvalidArgument,
          "the response of item " + std::to_string(outcome.index) + " is not a JSON object");
    }
    sorted.push_back(&outcome);
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const ItemOutcome* a, const ItemOutcome* b) { return a->index < b->index; });
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i]->index == sorted[i - 1]->index) {
      return Status(ErrorCode::kInvalidArgument,
                    "item " + std::to_string(sorted[i]->index) + " appears twice in one commit");
    }
  }
  return sorted;
}

std::string result_line(std::string_view custom_id, const ItemOutcome& outcome) {
  const nlohmann::json id(custom_id);
  std::string line = "{\"custom_id\":" + id.dump();
  if (outcome.error == ErrorCode::kOk) {
    line += ",\"response\":";
    line += outcome.response_json;
  } else {
    const nlohmann::json error = {{"code", std::string(error_code_name(outcome.error))},
                                  {"message", outcome.error_message}};
    line += ",\"error\":" + error.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  line += "}\n";
  return line;
}

int64_t retry_backoff_ms(int64_t attempts, int64_t first_ms, int64_t max_ms) {
  const int shift = static_cast<int>(std::clamp<int64_t>(attempts - 1, 0, 30));
  return std::min(max_ms, first_ms << shift);
}

Status check_new_file(std::string_view filename, std::string_view purpose, size_t content_bytes,
                      int64_t max_file_bytes) {
  if (static_cast<int64_t>(content_bytes) > max_file_bytes) {
    return Status(ErrorCode::kRequestTooLarge,
                  "the file has " + std::to_string(content_bytes) + " bytes; at most " +
                      std::to_string(max_file_bytes) + " are accepted",
                  ErrorWhere{.field = "file"});
  }
  if (purpose.empty()) {
    return Status(ErrorCode::kMissingParameter, "a file needs a purpose",
                  ErrorWhere{.field = "purpose"});
  }
  if (filename.size() > 255) {
    return Status(ErrorCode::kInvalidValue, "a filename has at most 255 bytes",
                  ErrorWhere{.field = "file"});
  }
  return ok_status();
}

Status job_not_found(std::string_view job_id) {
  return Status(ErrorCode::kJobNotFound, "no job '" + clip_for_echo(job_id) + "'",
                ErrorWhere{.field = "job_id"});
}

Status file_not_found(std::string_view file_id) {
  return Status(ErrorCode::kNotFound, "no file '" + clip_for_echo(file_id) + "'",
                ErrorWhere{.field = "file_id"});
}

Status check_lease_state(const Lease& lease, std::string_view state, int64_t epoch) {
  if (state == "cancelled") {
    return Status(ErrorCode::kJobCancelled, "job " + lease.job_id + " was cancelled");
  }
  if (state != "running" || epoch != lease.epoch) {
    return Status(ErrorCode::kLeaseLost, "the lease of job " + lease.job_id + " at epoch " +
                                             std::to_string(lease.epoch) +
                                             " is no longer current (job " + std::string(state) +
                                             ", epoch " + std::to_string(epoch) + ")");
  }
  return ok_status();
}

std::string finish_event_detail(int64_t epoch, ErrorCode code, std::string_view message) {
  std::string detail = "epoch " + std::to_string(epoch);
  if (code != ErrorCode::kOk) {
    detail += ": " + std::string(error_code_name(code)) + ": " + std::string(message);
  }
  return detail;
}

}  // namespace synapse::jobs
