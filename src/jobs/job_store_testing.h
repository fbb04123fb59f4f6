// SPDX-License-Identifier: Apache-2.0
// Tests only: one parameterised suite runs against both JobStore backends. A StoreBackend names
// the backend; a TestStore is where one test's store lives (a file in a temporary directory, or a
// fresh database on the process's throwaway PostgreSQL server, pg/pg_test_server.h) and opens as
// many stores on it as the test wants (two stores are two connections, as two processes or nodes
// would have).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "jobs/job_store.h"
#include "pg/pg_test_server.h"
#include "tests/support/test_support.h"

namespace synapse::jobs {

enum class StoreBackend { kSqlite, kPostgres };

// For INSTANTIATE_TEST_SUITE_P: "Sqlite", "Postgres".
std::string store_backend_name(const ::testing::TestParamInfo<StoreBackend>& info);

// The options both backends share.
struct TestStoreOptions {
  int64_t max_page_bytes = 1 << 20;
  int64_t max_item_attempts = 3;
  int64_t retry_backoff_ms = 1000;
  int64_t max_file_bytes = 64ll << 20;
  std::string node_name;  // PostgreSQL only
  std::function<int64_t()> clock;
};

class TestStore {
 public:
  // The backend's location; for PostgreSQL a new database. Unavailable when no server can run
  // here (the caller skips, or fails under CI=true: SYN_TEST_STORE does both).
  static Result<std::unique_ptr<TestStore>> create(StoreBackend backend);

  Result<std::unique_ptr<JobStore>> open(TestStoreOptions options = {}) const;
  StoreBackend backend() const { return backend_; }
  // The path, or the libpq connection string.
  const std::string& location() const { return location_; }
  // PostgreSQL: the database name (for the server's helpers); empty for SQLite.
  const std::string& database() const { return database_; }
  // Writes a schema version newer than this build's into the store's database.
  Status write_newer_schema_version() const;

 private:
  StoreBackend backend_ = StoreBackend::kSqlite;
  std::unique_ptr<testing::TempDir> dir_;
  std::string location_;
  std::string database_;
};

// The fault hook of either backend (set_fault_hook_for_testing).
void set_fault_hook(JobStore& store, std::function<Status(std::string_view)> hook);

}  // namespace synapse::jobs

// Binds `var` (std::unique_ptr<TestStore>) for `backend`, or skips (fails under CI=true) when the
// backend cannot run here.
#define SYN_TEST_STORE(var, backend)                                                      \
  std::unique_ptr<::synapse::jobs::TestStore> var;                                        \
  do {                                                                                    \
    auto syn_store_ = ::synapse::jobs::TestStore::create(backend);                        \
    if (!syn_store_.ok()) {                                                               \
      if (::synapse::testing::running_in_ci()) {                                          \
        FAIL() << "store unavailable under CI=true: " << syn_store_.status().to_string(); \
      }                                                                                   \
      GTEST_SKIP() << "store unavailable: " << syn_store_.status().to_string()            \
                   << " (install Debian's postgresql package)";                           \
    }                                                                                     \
    var = std::move(*syn_store_);                                                         \
  } while (false)
