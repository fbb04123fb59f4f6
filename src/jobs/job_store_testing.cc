// SPDX-License-Identifier: Apache-2.0
#include "jobs/job_store_testing.h"

#include "jobs/postgres_job_store.h"
#include "jobs/sqlite_job_store.h"
#include "pg/pg_db.h"
#include "sqlite/sqlite_db.h"

namespace synapse::jobs {

std::string store_backend_name(const ::testing::TestParamInfo<StoreBackend>& info) {
  return info.param == StoreBackend::kSqlite ? "Sqlite" : "Postgres";
}

Result<std::unique_ptr<TestStore>> TestStore::create(StoreBackend backend) {
  std::unique_ptr<TestStore> store(new TestStore());
  store->backend_ = backend;
  if (backend == StoreBackend::kSqlite) {
    store->dir_ = std::make_unique<testing::TempDir>();
    store->location_ = store->dir_->file("jobs.db");
    return store;
  }
  SYN_ASSIGN_OR_RETURN(testing::PgTestServer * server, testing::PgTestServer::shared());
  SYN_ASSIGN_OR_RETURN(store->database_, server->create_database());
  store->location_ = server->conninfo(store->database_);
  return store;
}

Result<std::unique_ptr<JobStore>> TestStore::open(TestStoreOptions options) const {
  if (backend_ == StoreBackend::kSqlite) {
    SYN_ASSIGN_OR_RETURN(
        std::unique_ptr<SqliteJobStore> store,
        SqliteJobStore::open(location_, {.max_page_bytes = options.max_page_bytes,
                                         .max_item_attempts = options.max_item_attempts,
                                         .retry_backoff_ms = options.retry_backoff_ms,
                                         .max_file_bytes = options.max_file_bytes,
                                         .clock = options.clock}));
    return std::unique_ptr<JobStore>(std::move(store));
  }
  SYN_ASSIGN_OR_RETURN(
      std::unique_ptr<PostgresJobStore> store,
      PostgresJobStore::open(location_, {.max_page_bytes = options.max_page_bytes,
                                         .max_item_attempts = options.max_item_attempts,
                                         .retry_backoff_ms = options.retry_backoff_ms,
                                         .max_file_bytes = options.max_file_bytes,
                                         .node_name = options.node_name,
                                         .clock = options.clock}));
  return std::unique_ptr<JobStore>(std::move(store));
}

Status TestStore::write_newer_schema_version() const {
  if (backend_ == StoreBackend::kSqlite) {
    SYN_ASSIGN_OR_RETURN(SqliteDb db, SqliteDb::open(location_, 1000));
    return db.exec("INSERT INTO schema_version(version) VALUES (" +
                   std::to_string(SqliteJobStore::kSchemaVersion + 1) + ")");
  }
  SYN_ASSIGN_OR_RETURN(PgDb db, PgDb::connect(location_));
  return db.exec("INSERT INTO schema_version(version) VALUES (" +
                 std::to_string(PostgresJobStore::kSchemaVersion + 1) + ")");
}

void set_fault_hook(JobStore& store, std::function<Status(std::string_view)> hook) {
  if (auto* sqlite = dynamic_cast<SqliteJobStore*>(&store)) {
    sqlite->set_fault_hook_for_testing(std::move(hook));
  } else if (auto* postgres = dynamic_cast<PostgresJobStore*>(&store)) {
    postgres->set_fault_hook_for_testing(std::move(hook));
  } else {
    ADD_FAILURE() << "unknown JobStore backend";
  }
}

}  // namespace synapse::jobs
