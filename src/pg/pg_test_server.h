// SPDX-License-Identifier: Apache-2.0
// A throwaway PostgreSQL server for tests: `initdb` into a temporary directory and `pg_ctl` on a
// Unix socket in that directory (no TCP), started once per test process on first use and stopped
// (its directory removed) when the process exits; each test takes a fresh database. The server
// binaries are Debian's `postgresql` package (found through `pg_config --bindir`, else
// /usr/lib/postgresql/*/bin). initdb and postgres refuse to run as root, so a root test process
// runs them as the `postgres` system user.
#pragma once

#include <string>

#include "base/status.h"

namespace synapse::testing {

class PgTestServer {
 public:
  // The process's server, started on first call. `unavailable` with the reason when the binaries
  // are missing or the server does not start (a skip locally, a failure under CI=true: use
  // SYN_REQUIRE_POSTGRES).
  static Result<PgTestServer*> shared();

  // Creates an empty database with a fresh name; returns the name.
  Result<std::string> create_database();
  // How to reach a database: a libpq connection string, or a postgresql:// URL (what --jobs-db
  // takes).
  std::string conninfo(const std::string& dbname) const;
  std::string url(const std::string& dbname) const;
  // Ends every other session on `dbname` (a connection cut, as a network failure would).
  Status terminate_connections(const std::string& dbname);
  const std::string& socket_dir() const { return dir_; }
  int port() const { return port_; }

  ~PgTestServer();

 private:
  PgTestServer() = default;
  Status start();
  std::string bin_dir_;
  std::string dir_;
  int port_ = 0;
  bool started_ = false;
  int owner_pid_ = 0;  // the process that started it (a forked child must not stop it)
  int next_database_ = 0;
};

}  // namespace synapse::testing

// Binds `var` (PgTestServer*) to the shared server, or skips (fails under CI=true) with the
// reason when no PostgreSQL can be started here.
#define SYN_REQUIRE_POSTGRES(var)                                                           \
  ::synapse::testing::PgTestServer* var = nullptr;                                          \
  do {                                                                                      \
    auto syn_pg_ = ::synapse::testing::PgTestServer::shared();                              \
    if (!syn_pg_.ok()) {                                                                    \
      if (::synapse::testing::running_in_ci()) {                                            \
        FAIL() << "PostgreSQL is required under CI=true: " << syn_pg_.status().to_string(); \
      }                                                                                     \
      GTEST_SKIP() << "no PostgreSQL server: " << syn_pg_.status().to_string()              \
                   << " (install Debian's postgresql package)";                             \
    }                                                                                       \
    var = *syn_pg_;                                                                         \
  } while (false)
