// SPDX-License-Identifier: Apache-2.0
// The JSON shapes of jobs, result pages and job listings, in one place so that the HTTP routes
// (/v1/jobs) and `synapse jobs … --json` print the same objects. Times are seconds since the Unix
// epoch, as OpenAI's objects have them. Also the validation of listing filters given as text
// (query parameters, command-line options), shared for the same reason.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "jobs/job_types.h"

namespace synapse::jobs {

// {"id", "object": "job", "status", "class", "created_at", "updated_at", "finished_at"?,
//  "counts": {"total", "succeeded", "failed", "pending", "invalid_lines"}, "pages", "attempts",
//  "error"?: {"code", "message"}, "line_errors"?: [{"line", "code", "message"}],
//  "idempotency_key"?, "request_digest", "expires_at"}. `expires_at` is when the job expires
// while unfinished (its execution deadline), and when retention deletes it once it is finished.
nlohmann::ordered_json job_json(const JobInfo& job);
int64_t job_expires_at_ms(const JobInfo& job);

// {"object": "list", "job_id", "page", "data": [{"custom_id", "response"|"error"}…],
//  "next_page": N+1 | null, "first_item", "last_item"}: the page's JSONL lines as objects.
// `next_page` is null while no later page is committed (a running job may still add one).
// A line that is not a JSON object (the store never writes one) is `internal`.
Result<nlohmann::ordered_json> result_page_json(const ResultPage& page);

// {"object": "list", "data": [jobs…], "has_more", "last_id": the last job's id | null}.
nlohmann::ordered_json job_list_json(const std::vector<JobInfo>& jobs, bool has_more);

// The node an executor runs on, from the owner it leases with: "synapse-serve/HOST:PID/worker-N"
// → "HOST:PID"; any other owner whole.
std::string executor_node(std::string_view owner);
// Which node ran a job, for listings: the lease owner's node while it runs, else the node of the
// last lease in its events ("leased" events: "owner OWNER, …"), with "+N" when N other nodes
// leased it before (a takeover); "-" when it was never leased.
std::string job_node_text(const JobInfo& job, const std::vector<JobEvent>& events);

// Listing filters as text: status (a job state name), class, limit (1 to kMaxListLimit). Bad
// values are `invalid_value` naming the field.
inline constexpr int64_t kDefaultListLimit = 20;
inline constexpr int64_t kMaxListLimit = 1000;
struct JobFilterText {
  std::optional<std::string_view> status;
  std::optional<std::string_view> job_class;
  std::optional<std::string_view> limit;
  std::optional<std::string_view> after;
};
Result<JobFilter> parse_job_filter(const JobFilterText& text);

// A job class by name, or `invalid_value` naming `field` ("class", "--class").
Result<JobClass> parse_job_class(std::string_view name, std::string_view field);
// A non-negative decimal integer (a page number), or `invalid_value` naming `field`.
Result<int64_t> parse_non_negative(std::string_view text, std::string_view field);

}  // namespace synapse::jobs
