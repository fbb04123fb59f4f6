// SPDX-License-Identifier: Apache-2.0
#include "server/batch_files.h"

#include <utility>

#include "api/api_error.h"
#include "base/echo.h"

namespace synapse::server {
namespace {

using jobs::JobInfo;
using jobs::JobState;

constexpr std::string_view kFilePrefix = "file-";
constexpr std::string_view kOutputSuffix = "-output";
constexpr std::string_view kErrorSuffix = "-errors";

int64_t seconds(int64_t ms) { return ms / 1000; }

OrderedJson seconds_or_null(std::optional<int64_t> ms) {
  return ms ? OrderedJson(seconds(*ms)) : OrderedJson();
}

bool has_output_file(const JobInfo& job) {
  return jobs::is_terminal(job.state) && job.counts.succeeded > 0;
}

// Failed items, and for a batch that ended early (cancelled, expired, failed) the items it never
// ran: OpenAI lists both in the error file.
bool has_error_file(const JobInfo& job) {
  return jobs::is_terminal(job.state) && (job.counts.failed > 0 || job.counts.pending() > 0);
}

Status file_not_found(std::string_view file_id, std::string_view why) {
  return Status(ErrorCode::kNotFound, "no file '" + clip_for_echo(file_id) + "'" + std::string(why),
                ErrorWhere{.field = "file_id"});
}

// The id stem of a batch's request lines: the job id without its "job_" prefix.
std::string_view id_stem(std::string_view job_id) {
  return job_id.starts_with("job_") ? job_id.substr(4) : job_id;
}

OrderedJson request_ids(std::string_view job_id, int64_t ordinal, OrderedJson custom_id) {
  OrderedJson line;
  line["id"] = "batch_req_" + std::string(id_stem(job_id)) + "_" + std::to_string(ordinal);
  line["custom_id"] = std::move(custom_id);
  return line;
}

std::string dump_line(const OrderedJson& line) {
  return line.dump(-1, ' ', false, OrderedJson::error_handler_t::replace) + "\n";
}

// One ResultPage line in OpenAI's output shape. Successes answer 200 with the response as body;
// failed items answer the HTTP status and error body the same request would have got live.
OrderedJson openai_result_line(std::string_view job_id, int64_t ordinal, OrderedJson stored) {
  OrderedJson line = request_ids(job_id, ordinal, std::move(stored["custom_id"]));
  OrderedJson response;
  response["request_id"] = "req_" + std::string(id_stem(job_id)) + "_" + std::to_string(ordinal);
  if (stored.contains("error")) {
    const OrderedJson& error = stored["error"];
    const std::string code = error.value("code", "internal");
    const Status status(error_code_from_name(code).value_or(ErrorCode::kInternal),
                        error.value("message", ""));
    const api::ApiError api_error = api::api_error_from_status(status);
    response["status_code"] = api_error.http_status;
    response["body"] = OrderedJson::parse(api::error_body(api_error), nullptr, false);
  } else {
    response["status_code"] = 200;
    response["body"] = std::move(stored["response"]);
  }
  // status_code first, as OpenAI writes it.
  OrderedJson ordered;
  ordered["status_code"] = response["status_code"];
  ordered["request_id"] = response["request_id"];
  ordered["body"] = std::move(response["body"]);
  line["response"] = std::move(ordered);
  line["error"] = nullptr;
  return line;
}

// Why an item of a batch that ended early never ran, as OpenAI's request-level error.
OrderedJson unrun_error(const JobInfo& job) {
  switch (job.state) {
    case JobState::kExpired:
      return {
          {"code", "batch_expired"},
          {"message", "This request could not be executed before the completion window expired."}};
    case JobState::kCancelled:
      return {{"code", "batch_cancelled"},
              {"message", "This request was not executed because the batch was cancelled."}};
    default:
      return {{"code", std::string(error_code_name(job.error_code))},
              {"message", "The batch failed before this request ran: " + job.error_message}};
  }
}

Result<JobInfo> load_batch_job(jobs::JobStore& store, const BatchFileRef& ref,
                               std::string_view file_id) {
  Result<JobInfo> job = store.get_job(ref.job_id);
  if (!job.ok() && job.status().code() == ErrorCode::kJobNotFound) {
    return file_not_found(file_id, " (its batch is gone)");
  }
  SYN_RETURN_IF_ERROR(job.status());
  if (!job->openai_batch) return file_not_found(file_id, "");
  if (!(ref.errors ? has_error_file(*job) : has_output_file(*job))) {
    return file_not_found(file_id, jobs::is_terminal(job->state)
                                       ? " (the batch has no such results)"
                                       : " yet (the batch has not finished)");
  }
  return job;
}

}  // namespace

std::string batch_output_file_id(std::string_view job_id) {
  return std::string(kFilePrefix) + std::string(job_id) + std::string(kOutputSuffix);
}

std::string batch_error_file_id(std::string_view job_id) {
  return std::string(kFilePrefix) + std::string(job_id) + std::string(kErrorSuffix);
}

std::optional<BatchFileRef> parse_batch_file_id(std::string_view file_id) {
  if (!file_id.starts_with(kFilePrefix)) return std::nullopt;
  std::string_view rest = file_id.substr(kFilePrefix.size());
  if (!rest.starts_with("job_")) return std::nullopt;  // uploads are "file-" + hex
  BatchFileRef ref;
  if (rest.ends_with(kOutputSuffix)) {
    rest.remove_suffix(kOutputSuffix.size());
  } else if (rest.ends_with(kErrorSuffix)) {
    rest.remove_suffix(kErrorSuffix.size());
    ref.errors = true;
  } else {
    return std::nullopt;
  }
  ref.job_id = std::string(rest);
  return ref;
}

std::string_view batch_status(const JobInfo& job) {
  switch (job.state) {
    case JobState::kQueued:
      return "in_progress";
    case JobState::kRunning:
      return job.counts.pending() == 0 ? "finalizing" : "in_progress";
    case JobState::kCompleted:
      return "completed";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
    case JobState::kExpired:
      return "expired";
  }
  return "failed";
}

OrderedJson batch_object(const JobInfo& job) {
  const jobs::OpenAiBatch batch = job.openai_batch.value_or(jobs::OpenAiBatch{});
  OrderedJson object;
  object["id"] = job.id;
  object["object"] = "batch";
  object["endpoint"] = batch.endpoint;
  OrderedJson errors = OrderedJson::array();
  for (const jobs::LineError& error : job.line_errors) {
    errors.push_back({{"code", std::string(error_code_name(error.code))},
                      {"line", error.line},
                      {"message", error.message},
                      {"param", nullptr}});
  }
  if (job.state == JobState::kFailed && job.error_code != ErrorCode::kOk) {
    errors.push_back({{"code", std::string(error_code_name(job.error_code))},
                      {"line", nullptr},
                      {"message", job.error_message},
                      {"param", nullptr}});
  }
  object["errors"] =
      errors.empty() ? OrderedJson() : OrderedJson{{"object", "list"}, {"data", std::move(errors)}};
  object["input_file_id"] = batch.input_file_id;
  object["completion_window"] = batch.completion_window;
  object["status"] = batch_status(job);
  object["output_file_id"] =
      has_output_file(job) ? OrderedJson(batch_output_file_id(job.id)) : OrderedJson();
  object["error_file_id"] =
      has_error_file(job) ? OrderedJson(batch_error_file_id(job.id)) : OrderedJson();
  // The input is validated inside batches.create, so a batch is in progress from its creation.
  object["created_at"] = seconds(job.created_ms);
  object["in_progress_at"] = seconds(job.created_ms);
  object["expires_at"] = seconds(job.execution_deadline_ms);
  auto finished_if = [&job](JobState state) {
    return job.state == state ? seconds_or_null(job.finished_ms) : OrderedJson();
  };
  object["finalizing_at"] = finished_if(JobState::kCompleted);
  object["completed_at"] = finished_if(JobState::kCompleted);
  object["failed_at"] = finished_if(JobState::kFailed);
  object["expired_at"] = finished_if(JobState::kExpired);
  object["cancelling_at"] = finished_if(JobState::kCancelled);
  object["cancelled_at"] = finished_if(JobState::kCancelled);
  object["request_counts"] = {{"total", job.counts.total},
                              {"completed", job.counts.succeeded},
                              {"failed", job.counts.failed}};
  const OrderedJson metadata = OrderedJson::parse(batch.metadata_json, nullptr, false);
  object["metadata"] = metadata.is_object() ? metadata : OrderedJson();
  return object;
}

OrderedJson file_object(const jobs::StoredFile& file) {
  OrderedJson object;
  object["id"] = file.id;
  object["object"] = "file";
  object["bytes"] = file.bytes;
  object["created_at"] = seconds(file.created_ms);
  object["expires_at"] = nullptr;
  object["filename"] = file.filename;
  object["purpose"] = file.purpose;
  object["status"] = "processed";
  object["status_details"] = nullptr;
  return object;
}

namespace {

// The content of a batch's output or error file; `job` is terminal and has that file.
Result<std::string> render_batch_file(jobs::JobStore& store, const JobInfo& job, bool errors) {
  // Every committed line gets an ordinal (its position across all pages), so request ids stay
  // the same whichever file, and however often, it is read: committed pages never change.
  std::string content;
  int64_t ordinal = 0;
  for (int64_t page_number = 0; page_number < job.page_count; ++page_number) {
    SYN_ASSIGN_OR_RETURN(const jobs::ResultPage page, store.result_page(job.id, page_number));
    std::string_view rest = page.jsonl;
    while (!rest.empty()) {
      const size_t end = rest.find('\n');
      const std::string_view text = rest.substr(0, end);
      rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
      if (text.empty()) continue;
      ++ordinal;
      OrderedJson stored = OrderedJson::parse(text, nullptr, false);
      if (!stored.is_object()) {
        return Status(ErrorCode::kInternal, "result page " + std::to_string(page_number) +
                                                " of job " + job.id +
                                                " holds a line that is not a JSON object");
      }
      if (stored.contains("error") != errors) continue;
      content += dump_line(openai_result_line(job.id, ordinal, std::move(stored)));
    }
  }
  if (errors && job.counts.pending() > 0) {
    SYN_ASSIGN_OR_RETURN(const std::vector<jobs::ItemInfo> items, store.items(job.id));
    for (const jobs::ItemInfo& item : items) {
      if (item.state != jobs::ItemState::kPending) continue;
      OrderedJson line = request_ids(job.id, ++ordinal, item.custom_id);
      line["response"] = nullptr;
      line["error"] = unrun_error(job);
      content += dump_line(line);
    }
  }
  return content;
}

std::string file_id_of(const BatchFileRef& ref) {
  return ref.errors ? batch_error_file_id(ref.job_id) : batch_output_file_id(ref.job_id);
}

}  // namespace

Result<std::string> batch_file_content(jobs::JobStore& store, const BatchFileRef& ref) {
  SYN_ASSIGN_OR_RETURN(const JobInfo job, load_batch_job(store, ref, file_id_of(ref)));
  return render_batch_file(store, job, ref.errors);
}

Result<jobs::StoredFile> batch_file(jobs::JobStore& store, const BatchFileRef& ref) {
  const std::string file_id = file_id_of(ref);
  SYN_ASSIGN_OR_RETURN(const JobInfo job, load_batch_job(store, ref, file_id));
  // The size is the rendered content's: computed, since nothing is stored.
  SYN_ASSIGN_OR_RETURN(const std::string content, render_batch_file(store, job, ref.errors));
  return jobs::StoredFile{
      .id = file_id,
      .filename = "batch_" + job.id + (ref.errors ? "_errors.jsonl" : "_output.jsonl"),
      .purpose = "batch_output",
      .bytes = static_cast<int64_t>(content.size()),
      .created_ms = job.finished_ms.value_or(job.updated_ms)};
}

}  // namespace synapse::server
