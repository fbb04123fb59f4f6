// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the job submission parser. The first input byte picks the form (even:
// JSONL, odd: the JSON body), the rest is the payload. Any input must parse or fail with an error
// value; an accepted submission must keep the promised invariants, and writing its requests back
// out as JSONL and parsing that again must give the same requests and the same digest.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <string_view>

#include "jobs/submission.h"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace synapse::jobs;
  if (size == 0) return 0;
  const std::string_view payload(reinterpret_cast<const char*>(data) + 1, size - 1);
  // Small limits so that the fuzzer reaches them.
  SubmissionLimits limits;
  limits.max_line_bytes = 2048;
  limits.max_requests = 8;
  limits.max_custom_id_bytes = 32;
  limits.max_line_errors = 16;
  // The server's job-item urls (request::job_item_urls(); the jobs layer takes them as a limit).
  limits.item_urls = {"/v1/completions", "/v1/chat/completions", "/v1/embeddings"};
  const bool jsonl = (data[0] & 1) == 0;
  synapse::Result<Submission> parsed =
      jsonl ? parse_jsonl_submission(payload, JobClass::kBatch, limits)
            : parse_json_submission(payload, limits);
  if (!parsed.ok()) {
    require(parsed.status().code() != synapse::ErrorCode::kOk);
    return 0;
  }
  const Submission& submission = *parsed;
  require(!submission.requests.empty());
  require(static_cast<int64_t>(submission.requests.size()) <= limits.max_requests);
  require(static_cast<int64_t>(submission.line_errors.size()) <= limits.max_line_errors);
  int64_t previous_line = 0;
  for (const LineError& error : submission.line_errors) {
    require(error.code != synapse::ErrorCode::kOk && !error.message.empty());
    require(error.line > previous_line);
    previous_line = error.line;
  }
  std::set<std::string> ids;
  std::string rewritten;
  for (const JobRequest& request : submission.requests) {
    require(!request.custom_id.empty() && ids.insert(request.custom_id).second);
    require(std::find(limits.item_urls.begin(), limits.item_urls.end(), request.url) !=
            limits.item_urls.end());
    const nlohmann::json body = nlohmann::json::parse(request.body, nullptr, false);
    require(body.is_object() && body.dump() == request.body);  // canonical form is a fixed point
    const nlohmann::json line = {
        {"custom_id", request.custom_id}, {"method", "POST"}, {"url", request.url}, {"body", body}};
    rewritten += line.dump() + "\n";
  }
  const std::string digest = submission_digest(submission);
  require(digest.size() == 64);
  SubmissionLimits roomy = limits;
  roomy.max_line_bytes = 1 << 20;
  synapse::Result<Submission> again =
      parse_jsonl_submission(rewritten, submission.job_class, roomy);
  require(again.ok() && again->line_errors.empty());
  require(again->requests.size() == submission.requests.size());
  require(submission_digest(*again) == digest);
  return 0;
}
