// SPDX-License-Identifier: Apache-2.0
#include "jobs/job_json.h"

#include <charconv>
#include <string>

#include "base/json_depth.h"

namespace synapse::jobs {
namespace {

using Json = nlohmann::ordered_json;

// Result lines are responses the executor produced from our own engine; the bound only keeps a
// damaged database from exhausting the stack of nlohmann's recursive parser.
constexpr int kMaxResultDepth = 256;

int64_t seconds(int64_t ms) { return ms / 1000; }

Status invalid_value(std::string_view field, std::string message) {
  return Status(ErrorCode::kInvalidValue, std::move(message),
                ErrorWhere{.field = std::string(field)});
}

// Parses a decimal integer that must use the whole text; nullopt otherwise.
std::optional<int64_t> parse_int(std::string_view text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

}  // namespace

int64_t job_expires_at_ms(const JobInfo& job) {
  if (is_terminal(job.state)) {
    return job.finished_ms.value_or(job.updated_ms) + job.retention_ttl_ms;
  }
  return job.execution_deadline_ms;
}

Json job_json(const JobInfo& job) {
  Json j;
  j["id"] = job.id;
  j["object"] = "job";
  j["status"] = std::string(job_state_name(job.state));
  j["class"] = std::string(job_class_name(job.job_class));
  j["created_at"] = seconds(job.created_ms);
  j["updated_at"] = seconds(job.updated_ms);
  if (job.finished_ms) j["finished_at"] = seconds(*job.finished_ms);
  j["counts"] = {{"total", job.counts.total},
                 {"succeeded", job.counts.succeeded},
                 {"failed", job.counts.failed},
                 {"pending", job.counts.pending()},
                 {"invalid_lines", job.counts.invalid_lines}};
  j["pages"] = job.page_count;
  j["attempts"] = job.attempts;
  if (job.error_code != ErrorCode::kOk) {
    j["error"] = {{"code", std::string(error_code_name(job.error_code))},
                  {"message", job.error_message}};
  }
  if (!job.line_errors.empty()) {
    Json errors = Json::array();
    for (const LineError& e : job.line_errors) {
      errors.push_back({{"line", e.line},
                        {"code", std::string(error_code_name(e.code))},
                        {"message", e.message}});
    }
    j["line_errors"] = std::move(errors);
  }
  if (job.idempotency_key) j["idempotency_key"] = *job.idempotency_key;
  j["request_digest"] = job.request_digest;
  j["expires_at"] = seconds(job_expires_at_ms(job));
  return j;
}

Result<Json> result_page_json(const ResultPage& page) {
  Json data = Json::array();
  std::string_view rest = page.jsonl;
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    if (line.empty()) continue;
    Json item = json_nesting_depth(line, kMaxResultDepth) > kMaxResultDepth
                    ? Json(Json::value_t::discarded)
                    : Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!item.is_object()) {
      return Status(ErrorCode::kInternal, "result page " + std::to_string(page.page) + " of job " +
                                              page.job_id + " holds a line that is not an object");
    }
    data.push_back(std::move(item));
  }
  Json j;
  j["object"] = "list";
  j["job_id"] = page.job_id;
  j["page"] = page.page;
  j["data"] = std::move(data);
  j["next_page"] = page.next_page ? Json(*page.next_page) : Json();
  j["first_item"] = page.first_item;
  j["last_item"] = page.last_item;
  return j;
}

Json job_list_json(const std::vector<JobInfo>& jobs, bool has_more) {
  Json data = Json::array();
  for (const JobInfo& job : jobs) data.push_back(job_json(job));
  Json j;
  j["object"] = "list";
  j["data"] = std::move(data);
  j["has_more"] = has_more;
  j["last_id"] = jobs.empty() ? Json() : Json(jobs.back().id);
  return j;
}

Result<JobClass> parse_job_class(std::string_view name, std::string_view field) {
  if (const std::optional<JobClass> job_class = job_class_from_name(name)) return *job_class;
  return invalid_value(
      field, "class must be \"batch\" or \"background\", not \"" + std::string(name) + "\"");
}

Result<int64_t> parse_non_negative(std::string_view text, std::string_view field) {
  const std::optional<int64_t> value = parse_int(text);
  if (!value || *value < 0) {
    return invalid_value(field, std::string(field) + " must be a non-negative integer, not \"" +
                                    std::string(text) + "\"");
  }
  return *value;
}

Result<JobFilter> parse_job_filter(const JobFilterText& text) {
  JobFilter filter;
  filter.limit = kDefaultListLimit;
  if (text.status) {
    filter.state = job_state_from_name(*text.status);
    if (!filter.state) {
      return invalid_value("status",
                           "status must be one of queued, running, completed, failed, cancelled, "
                           "expired; not \"" +
                               std::string(*text.status) + "\"");
    }
  }
  if (text.job_class) {
    SYN_ASSIGN_OR_RETURN(filter.job_class, parse_job_class(*text.job_class, "class"));
  }
  if (text.limit) {
    const std::optional<int64_t> limit = parse_int(*text.limit);
    if (!limit || *limit < 1 || *limit > kMaxListLimit) {
      return invalid_value("limit", "limit must be an integer from 1 to " +
                                        std::to_string(kMaxListLimit) + ", not \"" +
                                        std::string(*text.limit) + "\"");
    }
    filter.limit = *limit;
  }
  if (text.after) {
    if (text.after->empty()) return invalid_value("after", "after must be a job id");
    filter.after = std::string(*text.after);
  }
  return filter;
}

std::string executor_node(std::string_view owner) {
  constexpr std::string_view kServe = "synapse-serve/";
  if (!owner.starts_with(kServe)) return std::string(owner);
  owner.remove_prefix(kServe.size());
  return std::string(owner.substr(0, owner.find('/')));
}

std::string job_node_text(const JobInfo& job, const std::vector<JobEvent>& events) {
  std::vector<std::string> nodes;  // in lease order, each once
  const auto add = [&](std::string node) {
    std::erase(nodes, node);
    nodes.push_back(std::move(node));
  };
  for (const JobEvent& event : events) {
    constexpr std::string_view kOwner = "owner ";
    if (event.kind != "leased" || !event.detail.starts_with(kOwner)) continue;
    const std::string_view rest = std::string_view(event.detail).substr(kOwner.size());
    add(executor_node(rest.substr(0, rest.find(','))));
  }
  if (job.lease_owner) add(executor_node(*job.lease_owner));
  if (nodes.empty()) return "-";
  std::string text = nodes.back();
  if (nodes.size() > 1) text += " +" + std::to_string(nodes.size() - 1);
  return text;
}

}  // namespace synapse::jobs
