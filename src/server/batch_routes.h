// SPDX-License-Identifier: Apache-2.0
// OpenAI's batch flow over the durable job store, so the official SDKs' files.* and batches.*
// calls work unchanged: POST/GET /v1/files, GET/DELETE /v1/files/{id}, GET
// /v1/files/{id}/content, POST/GET /v1/batches, GET /v1/batches/{id}, POST
// /v1/batches/{id}/cancel. A batch is a job (same id) with its OpenAI attributes; its output and
// error files are views of the job's result pages (batch_files.h). Handlers only parse, call the
// store and serialize; the job executor runs the work. Private to the server library.
#pragma once

#include <optional>

#include "http/server.h"
#include "request/endpoints.h"
#include "server/jobs_api.h"

namespace synapse::server {

// The handler of the endpoint `kind` when it is one of these routes; nullopt otherwise.
std::optional<http::Handler> batch_route(request::EndpointKind kind, const JobsApi& jobs);

}  // namespace synapse::server
