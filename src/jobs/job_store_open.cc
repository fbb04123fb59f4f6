// SPDX-License-Identifier: Apache-2.0
#include "jobs/job_store_open.h"

#include <cstdlib>

#include "jobs/postgres_job_store.h"
#include "jobs/sqlite_job_store.h"
#include "pg/pg_db.h"

namespace synapse::jobs {

std::string job_store_location(const std::string& location) {
  if (!location.empty()) return location;
  const char* env = std::getenv(kJobsDbEnv);
  return env != nullptr ? std::string(env) : std::string();
}

Result<OpenedJobStore> open_job_store(const std::string& location) {
  OpenedJobStore opened;
  if (is_postgres_url(location)) {
    opened.display_name = redacted_conninfo(location);
    SYN_ASSIGN_OR_RETURN(std::unique_ptr<PostgresJobStore> store, PostgresJobStore::open(location));
    opened.store = std::move(store);
    opened.shared = true;
    return opened;
  }
  opened.display_name = location;
  SYN_ASSIGN_OR_RETURN(std::unique_ptr<SqliteJobStore> store, SqliteJobStore::open(location));
  opened.read_only = store->read_only();
  opened.store = std::move(store);
  return opened;
}

}  // namespace synapse::jobs
