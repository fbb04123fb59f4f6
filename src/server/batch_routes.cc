// SPDX-License-Identifier: Apache-2.0
#include "server/batch_routes.h"

#include <array>
#include <charconv>
#include <random>
#include <utility>

#include "api/api_error.h"
#include "base/hash.h"
#include "base/json_body.h"
#include "http/multipart.h"
#include "server/batch_files.h"
#include "server/http_reply.h"

namespace synapse::server {
namespace {

using jobs::JobInfo;

constexpr int kMaxJsonDepth = 64;
// The store takes keys of up to 255 bytes; the namespace prefix must fit beside the client's.
constexpr size_t kMaxIdempotencyKeyBytes = 200;
constexpr std::string_view kBatchKeyPrefix = "batch:";
constexpr std::string_view kCompletionWindow = "24h";  // the only window OpenAI offers
constexpr int64_t kCompletionWindowMs = int64_t{24} * 3600 * 1000;
// OpenAI's metadata bounds.
constexpr size_t kMaxMetadataPairs = 16;
constexpr size_t kMaxMetadataKeyBytes = 64;
constexpr size_t kMaxMetadataValueBytes = 512;

void send_json(http::Response& res, const OrderedJson& body) {
  res.set_content(body.dump(-1, ' ', false, OrderedJson::error_handler_t::replace),
                  std::string(kJson));
}

Status field_error(ErrorCode code, std::string message, std::string_view field) {
  return Status(code, std::move(message), ErrorWhere{.field = std::string(field)});
}

// The same error, naming this request's field as its param (the store names its own, e.g.
// job_id, which is not a field of this request).
Status as_param(const Status& status, std::string_view field) {
  return Status(status.code(), status.message(), ErrorWhere{.field = std::string(field)});
}

// A `limit` query parameter: an integer in [1, max]; `fallback` when absent.
Result<int64_t> query_limit(const http::Request& req, int64_t fallback, int64_t max) {
  if (!req.has_param("limit")) return fallback;
  const std::string text = req.param("limit");
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 1 || value > max) {
    return field_error(ErrorCode::kInvalidValue,
                       "limit must be an integer from 1 to " + std::to_string(max), "limit");
  }
  return value;
}

// OpenAI's list envelope; `fetched` holds one item more than the page when there are more.
template <typename T, typename ToJson>
OrderedJson list_object(const std::vector<T>& fetched, int64_t limit, ToJson to_json) {
  OrderedJson data = OrderedJson::array();
  for (size_t i = 0; i < fetched.size() && static_cast<int64_t>(i) < limit; ++i) {
    data.push_back(to_json(fetched[i]));
  }
  OrderedJson list;
  list["object"] = "list";
  list["first_id"] = data.empty() ? OrderedJson() : data.front()["id"];
  list["last_id"] = data.empty() ? OrderedJson() : data.back()["id"];
  list["data"] = std::move(data);
  list["has_more"] = static_cast<int64_t>(fetched.size()) > limit;
  return list;
}

// 128 random bits as hex: the idempotency key of a batches.create call without one, so that
// every such call makes a new batch (OpenAI's behaviour) instead of the store's digest dedup.
std::string fresh_batch_key() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  std::array<uint8_t, 16> bytes{};
  for (uint8_t& byte : bytes) byte = static_cast<uint8_t>(generator());
  return std::string(kBatchKeyPrefix) + "auto-" + to_hex(bytes);
}

// The body of batches.create, through the one JSON entry point (base/json_body.h).
Result<OrderedJson> parse_json_body(const std::string& body) {
  return parse_json_text<OrderedJson>(body, JsonLimits{.max_depth = kMaxJsonDepth});
}

Result<std::string> required_string(const OrderedJson& root, const char* name) {
  const auto it = root.find(name);
  if (it == root.end() || it->is_null()) {
    return field_error(ErrorCode::kMissingParameter, std::string(name) + " is missing", name);
  }
  if (!it->is_string() || it->get_ref<const std::string&>().empty()) {
    return field_error(it->is_string() ? ErrorCode::kInvalidValue : ErrorCode::kInvalidType,
                       std::string(name) + " must be a non-empty string", name);
  }
  return it->get<std::string>();
}

// metadata: absent, null, or an object of at most 16 string pairs (keys <= 64 bytes, values <=
// 512), as OpenAI bounds it. Returned as JSON text for the store.
Result<std::string> parse_metadata(const OrderedJson& root) {
  const auto it = root.find("metadata");
  if (it == root.end() || it->is_null()) return std::string("null");
  if (!it->is_object() || it->size() > kMaxMetadataPairs) {
    return field_error(it->is_object() ? ErrorCode::kInvalidValue : ErrorCode::kInvalidType,
                       "metadata must be an object of at most 16 string pairs", "metadata");
  }
  for (const auto& [key, value] : it->items()) {
    if (key.size() > kMaxMetadataKeyBytes || !value.is_string() ||
        value.get_ref<const std::string&>().size() > kMaxMetadataValueBytes) {
      return field_error(value.is_string() ? ErrorCode::kInvalidValue : ErrorCode::kInvalidType,
                         "metadata keys have at most 64 bytes and values are strings of at "
                         "most 512 bytes",
                         "metadata");
    }
  }
  return it->dump();
}

// The job behind a batch id; a job not created through /v1/batches is no batch.
Result<JobInfo> load_batch(jobs::JobStore& store, const std::string& batch_id) {
  Result<JobInfo> job = store.get_job(batch_id);
  if (!job.ok()) return as_param(job.status(), "batch_id");
  if (!job->openai_batch) {
    return field_error(ErrorCode::kJobNotFound,
                       "job '" + batch_id + "' was not created through /v1/batches", "batch_id");
  }
  return job;
}

class BatchRoutes {
 public:
  explicit BatchRoutes(const JobsApi& jobs) : jobs_(jobs), store_(*jobs.store) {}

  void upload_file(const http::Request& req, http::Response& res) const {
    const Status not_a_form =
        field_error(ErrorCode::kMissingParameter,
                    "send multipart/form-data with the fields purpose and file", "file");
    const std::string content_type = req.header("Content-Type");
    if (!http::multipart_boundary(content_type).ok()) return send_error(res, not_a_form);
    Result<std::vector<http::FormPart>> parts = http::parse_multipart_form(content_type, req.body);
    if (!parts.ok()) return send_error(res, parts.status());
    const auto part = [&](std::string_view name) -> const http::FormPart* {
      for (const http::FormPart& p : *parts) {
        if (p.name == name) return &p;
      }
      return nullptr;
    };
    const http::FormPart* file = part("file");
    if (file == nullptr) return send_error(res, not_a_form);
    const http::FormPart* purpose_part = part("purpose");
    const std::string purpose =
        purpose_part != nullptr ? std::string(purpose_part->content) : std::string();
    if (purpose != "batch") {
      return send_error(res, field_error(ErrorCode::kInvalidValue,
                                         "purpose must be \"batch\" (the only purpose this "
                                         "server stores files for)",
                                         "purpose"));
    }
    if (static_cast<int64_t>(file->content.size()) > jobs_.limits.max_input_bytes) {
      return send_error(res, field_error(ErrorCode::kRequestTooLarge,
                                         "the file has " + std::to_string(file->content.size()) +
                                             " bytes; a batch input has at most " +
                                             std::to_string(jobs_.limits.max_input_bytes),
                                         "file"));
    }
    Result<jobs::StoredFile> stored = store_.create_file(
        file->filename.empty() ? "file" : file->filename, purpose, file->content);
    if (!stored.ok()) return send_error(res, stored.status());
    send_json(res, file_object(*stored));
  }

  void list_files(const http::Request& req, http::Response& res) const {
    Result<int64_t> limit = query_limit(req, 10'000, 10'000);  // OpenAI's default and maximum
    if (!limit.ok()) return send_error(res, limit.status());
    jobs::FileFilter filter{.purpose = req.query_param("purpose"),
                            .limit = *limit + 1,
                            .after = req.query_param("after")};
    if (const std::optional<std::string> order = req.query_param("order")) {
      if (*order != "asc" && *order != "desc") {
        return send_error(res,
                          field_error(ErrorCode::kInvalidValue, "order is asc or desc", "order"));
      }
      filter.oldest_first = *order == "asc";
    }
    Result<std::vector<jobs::StoredFile>> files = store_.list_files(filter);
    if (!files.ok()) return send_error(res, files.status());
    send_json(res, list_object(*files, *limit, file_object));
  }

  void get_file(const http::Request& req, http::Response& res) const {
    const std::string id = req.path_param("id");
    const std::optional<BatchFileRef> view = parse_batch_file_id(id);
    Result<jobs::StoredFile> file = view ? batch_file(store_, *view) : store_.get_file(id);
    if (!file.ok()) return send_error(res, file.status());
    send_json(res, file_object(*file));
  }

  void file_content(const http::Request& req, http::Response& res) const {
    const std::string id = req.path_param("id");
    const std::optional<BatchFileRef> view = parse_batch_file_id(id);
    Result<std::string> content =
        view ? batch_file_content(store_, *view) : store_.file_content(id);
    if (!content.ok()) return send_error(res, content.status());
    res.set_content(*content, "application/octet-stream");
  }

  void delete_file(const http::Request& req, http::Response& res) const {
    const std::string id = req.path_param("id");
    if (parse_batch_file_id(id)) {
      return send_error(res, field_error(ErrorCode::kInvalidArgument,
                                         "'" + id +
                                             "' is a view of a batch's results; it goes when "
                                             "the batch's retention ends",
                                         "file_id"));
    }
    if (Status deleted = store_.delete_file(id); !deleted.ok()) return send_error(res, deleted);
    send_json(res, OrderedJson{{"id", id}, {"object", "file"}, {"deleted", true}});
  }

  void create_batch(const http::Request& req, http::Response& res) const {
    Result<jobs::Submission> submission = batch_submission(req);
    if (!submission.ok()) return send_error(res, submission.status());
    std::string key = fresh_batch_key();
    if (req.has_header("Idempotency-Key")) {
      const std::string given = req.header("Idempotency-Key");
      if (given.empty() || given.size() > kMaxIdempotencyKeyBytes) {
        return send_error(
            res, field_error(ErrorCode::kInvalidValue, "an Idempotency-Key has 1 to 200 bytes",
                             "Idempotency-Key"));
      }
      key = std::string(kBatchKeyPrefix) + given;
    }
    Result<jobs::SubmitResult> submitted = store_.submit(*submission, key);
    if (!submitted.ok()) return send_error(res, submitted.status());
    if (!submitted->job.openai_batch) {
      return send_error(res, field_error(ErrorCode::kIdempotencyConflict,
                                         "the Idempotency-Key belongs to job " + submitted->job.id +
                                             ", which was not created through /v1/batches",
                                         "Idempotency-Key"));
    }
    if (submitted->created && jobs_.on_submitted) jobs_.on_submitted();
    send_json(res, batch_object(submitted->job));
  }

  void get_batch(const http::Request& req, http::Response& res) const {
    Result<JobInfo> job = load_batch(store_, req.path_param("id"));
    if (!job.ok()) return send_error(res, job.status());
    send_json(res, batch_object(*job));
  }

  void list_batches(const http::Request& req, http::Response& res) const {
    Result<int64_t> limit = query_limit(req, 20, 100);  // OpenAI's default and maximum
    if (!limit.ok()) return send_error(res, limit.status());
    const jobs::JobFilter filter{
        .limit = *limit + 1, .after = req.query_param("after"), .openai_batches_only = true};
    Result<std::vector<JobInfo>> listed = store_.list_jobs(filter);
    if (!listed.ok()) return send_error(res, listed.status());
    send_json(res, list_object(*listed, *limit, batch_object));
  }

  void cancel_batch(const http::Request& req, http::Response& res) const {
    Result<JobInfo> job = load_batch(store_, req.path_param("id"));
    if (!job.ok()) return send_error(res, job.status());
    Result<JobInfo> cancelled = store_.cancel(job->id);
    if (!cancelled.ok()) return send_error(res, cancelled.status());
    send_json(res, batch_object(*cancelled));
  }

 private:
  // The body of batches.create and its input file, as a submission whose every request targets
  // the batch's endpoint; lines that do not are per-line errors, as OpenAI reports them.
  Result<jobs::Submission> batch_submission(const http::Request& req) const {
    SYN_ASSIGN_OR_RETURN(const OrderedJson root, parse_json_body(req.body));
    jobs::OpenAiBatch batch;
    SYN_ASSIGN_OR_RETURN(batch.input_file_id, required_string(root, "input_file_id"));
    SYN_ASSIGN_OR_RETURN(batch.endpoint, required_string(root, "endpoint"));
    const std::vector<std::string> urls = request::job_item_urls();
    if (std::find(urls.begin(), urls.end(), batch.endpoint) == urls.end()) {
      std::string names;
      for (const std::string& u : urls) names += (names.empty() ? "" : ", ") + u;
      return field_error(ErrorCode::kInvalidValue, "endpoint must be one of " + names, "endpoint");
    }
    SYN_ASSIGN_OR_RETURN(batch.completion_window, required_string(root, "completion_window"));
    if (batch.completion_window != kCompletionWindow) {
      return field_error(ErrorCode::kInvalidValue, "completion_window must be \"24h\"",
                         "completion_window");
    }
    SYN_ASSIGN_OR_RETURN(batch.metadata_json, parse_metadata(root));

    Result<jobs::StoredFile> file = store_.get_file(batch.input_file_id);
    if (!file.ok()) return as_param(file.status(), "input_file_id");
    if (file->purpose != "batch") {
      return field_error(ErrorCode::kInvalidValue,
                         "file " + file->id + " has purpose " + file->purpose +
                             "; a batch input needs purpose batch",
                         "input_file_id");
    }
    Result<std::string> content = store_.file_content(batch.input_file_id);
    if (!content.ok()) return as_param(content.status(), "input_file_id");
    Result<jobs::Submission> submission =
        jobs::parse_jsonl_submission(*content, jobs::JobClass::kBatch, submission_limits(jobs_));
    if (!submission.ok()) return as_param(submission.status(), "input_file_id");
    if (Status s = jobs::restrict_to_endpoint(*submission, batch.endpoint, jobs_.limits); !s.ok()) {
      return as_param(s, "input_file_id");
    }
    submission->execution_ttl_ms = kCompletionWindowMs;
    submission->openai_batch = std::move(batch);
    return submission;
  }

  const JobsApi& jobs_;
  jobs::JobStore& store_;
};

}  // namespace

std::optional<http::Handler> batch_route(request::EndpointKind kind, const JobsApi& jobs) {
  using request::EndpointKind;
  using Method = void (BatchRoutes::*)(const http::Request&, http::Response&) const;
  Method method = nullptr;
  switch (kind) {
    case EndpointKind::kUploadFile:
      method = &BatchRoutes::upload_file;
      break;
    case EndpointKind::kListFiles:
      method = &BatchRoutes::list_files;
      break;
    case EndpointKind::kFileContent:
      method = &BatchRoutes::file_content;
      break;
    case EndpointKind::kGetFile:
      method = &BatchRoutes::get_file;
      break;
    case EndpointKind::kDeleteFile:
      method = &BatchRoutes::delete_file;
      break;
    case EndpointKind::kCreateBatch:
      method = &BatchRoutes::create_batch;
      break;
    case EndpointKind::kListBatches:
      method = &BatchRoutes::list_batches;
      break;
    case EndpointKind::kGetBatch:
      method = &BatchRoutes::get_batch;
      break;
    case EndpointKind::kCancelBatch:
      method = &BatchRoutes::cancel_batch;
      break;
    default:
      return std::nullopt;
  }
  // Shared by the handlers, which the router copies; it lives as long as the server's routes.
  auto routes = std::make_shared<const BatchRoutes>(jobs);
  return [routes, method](const http::Request& req, http::Response& res) {
    ((*routes).*method)(req, res);
  };
}

}  // namespace synapse::server
