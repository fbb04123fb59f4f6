// SPDX-License-Identifier: Apache-2.0
// The durable-job routes of the HTTP server (docs/jobs.md, "HTTP API"): POST /v1/jobs (the JSON
// form, or batch JSONL by Content-Type; Idempotency-Key), GET /v1/jobs (filters, cursor),
// GET /v1/jobs/{id}, GET /v1/jobs/{id}/results?page=N, POST /v1/jobs/{id}/cancel. Handlers only
// parse, call the JobStore and render (jobs/job_json.h); the executor in `synapse serve` runs the
// jobs.
#pragma once

#include <optional>

#include "http/server.h"
#include "request/endpoints.h"
#include "server/jobs_api.h"

namespace synapse::server {

// `jobs` (and its store) must outlive the server.
// The handler of the endpoint `kind` when it is one of these routes; nullopt otherwise.
std::optional<http::Handler> job_route(request::EndpointKind kind, const JobsApi& jobs);

}  // namespace synapse::server
