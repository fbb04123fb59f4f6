// SPDX-License-Identifier: Apache-2.0
// What the job routes need (/v1/jobs, and OpenAI's /v1/files + /v1/batches): the durable job
// store, shared with the executor that runs the jobs and with the `synapse jobs` CLI (SQLite
// serializes the writers), the limits on a submission, and how to wake the executor when a job
// arrives so it need not wait for its next poll. Built by `synapse serve` (or a test) and handed
// to HttpServer by pointer; it must outlive the server.
#pragma once

#include <functional>
#include <string>

#include "jobs/job_store.h"
#include "jobs/submission.h"
#include "request/endpoints.h"

namespace synapse::server {

struct JobsApi {
  jobs::JobStore* store = nullptr;  // not owned
  jobs::SubmissionLimits limits;
  std::function<void()> on_submitted;  // may be empty
  // The job executor's series for GET /metrics (labelled by node); empty: none runs here.
  std::function<std::string()> render_metrics;
};

// The limits a submission is parsed with: the API's, its items' urls from the endpoint table.
inline jobs::SubmissionLimits submission_limits(const JobsApi& api) {
  jobs::SubmissionLimits limits = api.limits;
  if (limits.item_urls.empty()) limits.item_urls = request::job_item_urls();
  return limits;
}

}  // namespace synapse::server
