// SPDX-License-Identifier: Apache-2.0
// Which JobStore a location names: a postgresql:// (or postgres://) URL is the PostgreSQL store
// that several `synapse serve` nodes share; anything else is the path of an embedded SQLite
// database. Used by `synapse serve --jobs-db` and `synapse jobs --db` (and SYNAPSE_JOBS_DB).
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "jobs/job_store.h"

namespace synapse::jobs {

struct OpenedJobStore {
  std::unique_ptr<JobStore> store;
  // PostgreSQL: many processes on many machines execute from it; no executor lock applies.
  bool shared = false;
  bool read_only = false;    // SQLite only: a file this process cannot write
  std::string display_name;  // the path, or the URL without its password: safe to print
};

// The environment variable that names the job database when no option does.
inline constexpr const char* kJobsDbEnv = "SYNAPSE_JOBS_DB";

// `location` itself when set, else $SYNAPSE_JOBS_DB when set, else empty (the caller's default).
std::string job_store_location(const std::string& location);

// Opens (creating, migrating) the store `location` names. Errors name it without a password.
Result<OpenedJobStore> open_job_store(const std::string& location);

}  // namespace synapse::jobs
