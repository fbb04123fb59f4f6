// SPDX-License-Identifier: Apache-2.0
// OpenAI's Batch and File objects over the job store, without HTTP: how a job created through
// /v1/batches looks as a Batch (status mapping, timestamps, counts, line errors), how a stored
// upload looks as a File, and the output and error files, which are not stored but are views of
// the batch's committed result pages (docs/jobs.md, "OpenAI batches").
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "jobs/job_store.h"

namespace synapse::server {

using OrderedJson = nlohmann::ordered_json;

// "file-<job id>-output" and "file-<job id>-errors": derived, so they need no row of their own.
std::string batch_output_file_id(std::string_view job_id);
std::string batch_error_file_id(std::string_view job_id);

struct BatchFileRef {
  std::string job_id;
  bool errors = false;  // the error file; else the output file
};
// The batch a derived file id names; nullopt for any other id (an upload's, or garbage).
std::optional<BatchFileRef> parse_batch_file_id(std::string_view file_id);

// validating is never reported (the input is checked inside batches.create), nor cancelling (a
// cancel takes effect at once): queued or running → in_progress, running with every item
// committed → finalizing, then the terminal states by name.
std::string_view batch_status(const jobs::JobInfo& job);

// The Batch object of a job created through /v1/batches (job.openai_batch set).
OrderedJson batch_object(const jobs::JobInfo& job);
OrderedJson file_object(const jobs::StoredFile& file);

// The output or error file of a batch as a File (purpose batch_output, bytes = its content's
// size) and its content; `not_found` (field file_id) while the batch object does not name it.
Result<jobs::StoredFile> batch_file(jobs::JobStore& store, const BatchFileRef& ref);
Result<std::string> batch_file_content(jobs::JobStore& store, const BatchFileRef& ref);

}  // namespace synapse::server
