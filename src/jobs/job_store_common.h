// SPDX-License-Identifier: Apache-2.0
// What the two JobStore backends (SQLite, PostgreSQL) share beside their SQL: ids, the checks on
// what callers pass in, the JSONL line of a result, the retry back-off and the errors they return,
// so both keep one set of semantics (job_store.h). Internal to src/jobs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "jobs/job_types.h"

namespace synapse::jobs {

// 96 random bits each: ids from concurrent processes (or machines) never collide in practice.
std::string new_job_id();   // "job_" + 24 hex
std::string new_file_id();  // "file-" + 24 hex

// A submission the store can take: at least one request, a key of 1 to 255 bytes.
Status check_submission(const Submission& submission,
                        std::optional<std::string_view> idempotency_key);
// A hand-built Submission may list errors without counting them: the larger of the two.
int64_t invalid_line_count(const Submission& submission);
std::string line_errors_json(const std::vector<LineError>& errors);
// Written by a store; a parse failure would mean corruption, shown as no details.
std::vector<LineError> parse_line_errors(std::string_view json);

// The outcomes of one commit in index order, refused when a response is not a JSON object or an
// index appears twice. The pointers point into `outcomes`.
Result<std::vector<const ItemOutcome*>> sorted_outcomes(const std::vector<ItemOutcome>& outcomes);
// One JSONL line of a result page.
std::string result_line(std::string_view custom_id, const ItemOutcome& outcome);
// The back-off before attempt `attempts` + 1 of an item: doubles per attempt, capped.
int64_t retry_backoff_ms(int64_t attempts, int64_t first_ms, int64_t max_ms);

// A file create_file can take (`request_too_large`, `missing_parameter`,
// `invalid_value`).
Status check_new_file(std::string_view filename, std::string_view purpose, size_t content_bytes,
                      int64_t max_file_bytes);

Status job_not_found(std::string_view job_id);
Status file_not_found(std::string_view file_id);
// The job (in `state`, at `epoch`) lets `lease` write: `job_cancelled` after a cancel,
// `lease_lost` when the epoch moved on or the job left `running`.
Status check_lease_state(const Lease& lease, std::string_view state, int64_t epoch);

// The job event of finish_leased (complete or fail): "epoch E", and ": code: message" for a
// failure. A failure without a code is `internal` (failure_code).
std::string finish_event_detail(int64_t epoch, ErrorCode code, std::string_view message);
inline ErrorCode failure_code(ErrorCode code) {
  return code == ErrorCode::kOk ? ErrorCode::kInternal : code;
}

// The columns a JobInfo is read from, in read_job's order, and the tables every job query reads
// (a batch's OpenAI attributes come with its job): the same SQL on both stores.
inline constexpr std::string_view kJobColumns =
    "id, idempotency_key, request_digest, class, state, item_count, succeeded_count, "
    "failed_count, invalid_line_count, attempts, page_count, lease_owner, lease_epoch, "
    "lease_deadline_ms, created_ms, updated_ms, execution_deadline_ms, retention_ttl_ms, "
    "finished_ms, error_code, error_message, line_errors, b.input_file_id, b.endpoint, "
    "b.completion_window, b.metadata";
inline constexpr std::string_view kJobTables =
    " FROM jobs LEFT JOIN openai_batches b ON b.job_id = jobs.id";

}  // namespace synapse::jobs
