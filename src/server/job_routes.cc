// SPDX-License-Identifier: Apache-2.0
#include "server/job_routes.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>

#include "api/api_error.h"
#include "jobs/job_json.h"
#include "server/http_reply.h"

namespace synapse::server {
namespace {

using Json = nlohmann::ordered_json;

// Where a JSONL submission may name its class (the JSON form carries it in the body).
constexpr const char* kClassParam = "class";
constexpr const char* kClassHeader = "X-Synapse-Class";

void send_json(http::Response& res, const Json& body, int http_status = 200) {
  res.status = http_status;
  // Messages can quote user input; never let a stray byte turn a reply into an exception.
  res.set_content(body.dump(-1, ' ', false, Json::error_handler_t::replace), std::string(kJson));
}

// The media type without parameters, lower-cased: "application/jsonl; charset=utf-8" →
// "application/jsonl".
std::string media_type(const http::Request& req) {
  std::string type = req.header("Content-Type");
  type = type.substr(0, type.find(';'));
  type.erase(std::remove_if(type.begin(), type.end(),
                            [](unsigned char c) { return std::isspace(c) != 0; }),
             type.end());
  std::transform(type.begin(), type.end(), type.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return type;
}

bool is_jsonl(const http::Request& req) {
  const std::string type = media_type(req);
  return type == "application/jsonl" || type == "application/x-ndjson";
}

// The class a request names outside its body (query parameter first, then header), if any.
std::optional<std::string> class_outside_body(const http::Request& req) {
  if (req.has_param(kClassParam)) return req.param(kClassParam);
  if (req.has_header(kClassHeader)) return req.header(kClassHeader);
  return std::nullopt;
}

Result<jobs::Submission> parse_submission(const JobsApi& api, const http::Request& req) {
  const std::optional<std::string> class_name = class_outside_body(req);
  if (is_jsonl(req)) {
    jobs::JobClass job_class = jobs::JobClass::kBatch;
    if (class_name) {
      SYN_ASSIGN_OR_RETURN(job_class, jobs::parse_job_class(*class_name, "class"));
    }
    return jobs::parse_jsonl_submission(req.body, job_class, submission_limits(api));
  }
  // Refused rather than ignored: a client that names the class twice would otherwise get the
  // body's (or the default) without noticing.
  if (class_name) {
    return Status(ErrorCode::kInvalidValue,
                  "the JSON form carries its class in the body (\"class\"); ?class= and "
                  "X-Synapse-Class apply to JSONL bodies (Content-Type: application/jsonl)",
                  ErrorWhere{.field = "class"});
  }
  return jobs::parse_json_submission(req.body, submission_limits(api));
}

void handle_submit(const JobsApi& api, const http::Request& req, http::Response& res) {
  Result<jobs::Submission> submission = parse_submission(api, req);
  if (!submission.ok()) return send_error(res, submission.status());
  std::optional<std::string> key;
  if (req.has_header("Idempotency-Key")) key = req.header("Idempotency-Key");
  Result<jobs::SubmitResult> submitted =
      api.store->submit(*submission, key ? std::optional<std::string_view>(*key) : std::nullopt);
  if (!submitted.ok()) return send_error(res, submitted.status());
  if (!submitted->created) res.set_header("Idempotent-Replayed", "true");
  send_json(res, jobs::job_json(submitted->job), submitted->created ? 201 : 200);
  // Wakes the executor now rather than at its next poll; only a new job has work for it.
  if (submitted->created && api.on_submitted) api.on_submitted();
}

void handle_list(const JobsApi& api, const http::Request& req, http::Response& res) {
  const std::optional<std::string> status = req.query_param("status"),
                                   job_class = req.query_param("class"),
                                   limit = req.query_param("limit"),
                                   after = req.query_param("after");
  const auto view = [](const std::optional<std::string>& s) {
    return s ? std::optional<std::string_view>(*s) : std::nullopt;
  };
  Result<jobs::JobFilter> filter = jobs::parse_job_filter({.status = view(status),
                                                           .job_class = view(job_class),
                                                           .limit = view(limit),
                                                           .after = view(after)});
  if (!filter.ok()) return send_error(res, filter.status());
  // An unknown cursor would list nothing, which reads as "no more jobs"; say what is wrong.
  if (filter->after) {
    const Result<jobs::JobInfo> cursor = api.store->get_job(*filter->after);
    if (cursor.status().code() == ErrorCode::kJobNotFound) {
      return send_error(res,
                        Status(ErrorCode::kInvalidValue, "after: no job with id " + *filter->after,
                               ErrorWhere{.field = "after"}));
    }
    if (!cursor.ok()) return send_error(res, cursor.status());
  }
  const int64_t limit_value = filter->limit;
  filter->limit = limit_value + 1;  // one more than asked tells whether more follow
  Result<std::vector<jobs::JobInfo>> listed = api.store->list_jobs(*filter);
  if (!listed.ok()) return send_error(res, listed.status());
  const bool has_more = static_cast<int64_t>(listed->size()) > limit_value;
  if (has_more) listed->resize(static_cast<size_t>(limit_value));
  send_json(res, jobs::job_list_json(*listed, has_more));
}

void handle_results(const JobsApi& api, const http::Request& req, http::Response& res) {
  int64_t page = 0;
  if (req.has_param("page")) {
    Result<int64_t> parsed = jobs::parse_non_negative(req.param("page"), "page");
    if (!parsed.ok()) return send_error(res, parsed.status());
    page = *parsed;
  }
  // Not committed yet (or past the last page): the store's not_found, naming the page and how
  // many pages the job has.
  Result<jobs::ResultPage> result = api.store->result_page(req.path_param("id"), page);
  if (!result.ok()) return send_error(res, result.status());
  Result<Json> body = jobs::result_page_json(*result);
  if (!body.ok()) return send_error(res, body.status());
  send_json(res, *body);
}

}  // namespace

std::optional<http::Handler> job_route(request::EndpointKind kind, const JobsApi& jobs) {
  using request::EndpointKind;
  const JobsApi* api = &jobs;
  switch (kind) {
    case EndpointKind::kSubmitJob:
      return
          [api](const http::Request& req, http::Response& res) { handle_submit(*api, req, res); };
    case EndpointKind::kListJobs:
      return [api](const http::Request& req, http::Response& res) { handle_list(*api, req, res); };
    case EndpointKind::kGetJob:
      return [api](const http::Request& req, http::Response& res) {
        Result<jobs::JobInfo> job = api->store->get_job(req.path_param("id"));
        if (!job.ok()) return send_error(res, job.status());
        send_json(res, jobs::job_json(*job));
      };
    case EndpointKind::kJobResults:
      return
          [api](const http::Request& req, http::Response& res) { handle_results(*api, req, res); };
    case EndpointKind::kCancelJob:
      return [api](const http::Request& req, http::Response& res) {
        Result<jobs::JobInfo> job = api->store->cancel(req.path_param("id"));
        if (!job.ok()) return send_error(res, job.status());
        send_json(res, jobs::job_json(*job));
      };
    default:
      return std::nullopt;
  }
}

}  // namespace synapse::server
