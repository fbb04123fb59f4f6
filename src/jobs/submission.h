// SPDX-License-Identifier: Apache-2.0
// Parsing of job submissions (untrusted input, fuzzed by fuzz/jobs_jsonl_fuzz.cc): OpenAI-style
// batch JSONL and the JSON form {"requests": [...], "class": ...}. A bad line is reported with its
// number and a stable code and the others still form the job; only problems with the whole input
// (too large, not JSON at all in the JSON form, no valid request) fail the parse.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "jobs/job_types.h"

namespace synapse::jobs {

struct SubmissionLimits {
  int64_t max_input_bytes = 64ll << 20;
  int64_t max_line_bytes = 1ll << 20;
  int64_t max_requests = 50'000;  // OpenAI's batch limit
  int64_t max_custom_id_bytes = 512;
  int64_t max_line_errors = 1000;  // details kept for this many; every one is counted
  // The urls an item may name (the server's endpoint table, request::job_item_urls()); empty:
  // any url, left to the executor to refuse.
  std::vector<std::string> item_urls;
};

// One request per line: {"custom_id", "method": "POST", "url", "body"}. Blank lines are skipped.
Result<Submission> parse_jsonl_submission(std::string_view text, JobClass job_class,
                                          const SubmissionLimits& limits = {});

// {"requests": [{"custom_id", "url", "body", "method"?}, ...], "class"?: "batch"|"background",
//  "execution_ttl_s"?, "retention_ttl_s"?}; line numbers in errors are 1-based array indices.
Result<Submission> parse_json_submission(std::string_view text,
                                         const SubmissionLimits& limits = {});

// OpenAI's batch rule: every line targets the batch's one endpoint. Moves the requests whose url
// differs into `line_errors` (`invalid_value`, field url; kept in line order, at most
// `limits.max_line_errors`) and counts each in `invalid_lines`. `invalid_argument` when no request
// is left.
Status restrict_to_endpoint(Submission& submission, std::string_view endpoint,
                            const SubmissionLimits& limits = {});

// SHA-256 (hex) of the canonical submission: class and each request's custom_id, url and
// canonical body, in order. Two submissions with the same digest run the same work.
std::string submission_digest(const Submission& submission);

}  // namespace synapse::jobs
