// SPDX-License-Identifier: Apache-2.0
#include "pg/pg_test_server.h"

#include <glob.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>

#include "pg/pg_db.h"
#include "tests/support/test_support.h"

namespace synapse::testing {
namespace {

bool executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (const char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

// Where initdb, pg_ctl and postgres are: pg_config's bindir (Debian's libpq-dev points it at the
// server's when the server is installed), else the newest /usr/lib/postgresql/*/bin.
std::string find_bin_dir() {
  if (FILE* pipe = popen("pg_config --bindir 2>/dev/null", "r")) {
    char line[4096] = {};
    const bool read = std::fgets(line, sizeof line, pipe) != nullptr;
    pclose(pipe);
    std::string dir = read ? line : "";
    while (!dir.empty() && (dir.back() == '\n' || dir.back() == ' ')) dir.pop_back();
    if (!dir.empty() && executable(dir + "/initdb") && executable(dir + "/pg_ctl")) return dir;
  }
  glob_t found{};
  std::string best;
  if (glob("/usr/lib/postgresql/*/bin/initdb", 0, nullptr, &found) == 0) {
    for (size_t i = 0; i < found.gl_pathc; ++i) {
      const std::string dir = std::filesystem::path(found.gl_pathv[i]).parent_path().string();
      if (executable(dir + "/pg_ctl") && dir > best) best = dir;
    }
  }
  globfree(&found);
  return best;
}

}  // namespace

Result<PgTestServer*> PgTestServer::shared() {
  static std::mutex mutex;
  static std::unique_ptr<PgTestServer> server;
  static Status failure;
  const std::lock_guard lock(mutex);
  if (!failure.ok()) return failure;
  if (server == nullptr) {
    std::unique_ptr<PgTestServer> started(new PgTestServer());
    failure = started->start();
    if (!failure.ok()) return failure;
    server = std::move(started);
  }
  return server.get();
}

Status PgTestServer::start() {
  owner_pid_ = getpid();
  bin_dir_ = find_bin_dir();
  if (bin_dir_.empty()) {
    return Status(ErrorCode::kUnavailable,
                  "initdb and pg_ctl not found (pg_config --bindir, /usr/lib/postgresql/*/bin)");
  }
  std::string pattern = (std::filesystem::temp_directory_path() / "synapse-pg-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    return Status(ErrorCode::kIoError, "mkdtemp failed for the test PostgreSQL directory");
  }
  dir_ = pattern;
  // The server's runtime user must own its directory; as root that is `postgres`.
  std::string as_user;
  if (geteuid() == 0) {
    const passwd* user = getpwnam("postgres");
    if (user == nullptr) {
      return Status(ErrorCode::kUnavailable,
                    "running as root, and there is no `postgres` user to run the server as");
    }
    if (chown(dir_.c_str(), user->pw_uid, user->pw_gid) != 0) {
      return Status(ErrorCode::kIoError, "cannot hand " + dir_ + " to the postgres user");
    }
    as_user = "runuser -u postgres -- ";
  }
  // A socket-only server needs a port only to name its socket; a per-process one keeps two test
  // processes' names apart even if they shared a directory.
  port_ = 20000 + static_cast<int>(getpid() % 30000);
  const std::string data = dir_ + "/data";
  const CommandResult init =
      run_command(as_user + shell_quote(bin_dir_ + "/initdb") + " -D " + shell_quote(data) +
                  " -A trust -U synapse -E UTF8 --locale=C --no-sync");
  if (init.exit_code != 0) {
    return Status(ErrorCode::kUnavailable, "initdb failed: " + init.stderr_text);
  }
  // Durability settings off: tests kill clients, never this server, and they must be fast.
  // SYNAPSE_PG_TEST_DURABLE=1 keeps PostgreSQL's defaults (a commit waits for its WAL flush), so
  // a benchmark compares with SQLite's synchronous=FULL on equal terms.
  const char* durable = std::getenv("SYNAPSE_PG_TEST_DURABLE");
  const bool sync = durable != nullptr && std::string(durable) == "1";
  const std::string options =
      "-k " + dir_ + " -p " + std::to_string(port_) + " -c listen_addresses='' " +
      (sync ? "" : "-c fsync=off -c synchronous_commit=off -c full_page_writes=off ") +
      "-c max_connections=200";
  const CommandResult start = run_command(
      as_user + shell_quote(bin_dir_ + "/pg_ctl") + " -D " + shell_quote(data) + " -l " +
      shell_quote(dir_ + "/server.log") + " -w -t 60 -o " + shell_quote(options) + " start");
  if (start.exit_code != 0) {
    return Status(ErrorCode::kUnavailable, "pg_ctl start failed: " + start.stdout_text +
                                               start.stderr_text + " " +
                                               read_file_text(dir_ + "/server.log"));
  }
  started_ = true;
  return ok_status();
}

PgTestServer::~PgTestServer() {
  if (owner_pid_ != getpid()) return;
  if (started_) {
    const std::string as_user = geteuid() == 0 ? "runuser -u postgres -- " : "";
    (void)run_command(as_user + shell_quote(bin_dir_ + "/pg_ctl") + " -D " +
                      shell_quote(dir_ + "/data") + " -m immediate -w stop");
  }
  if (!dir_.empty() && owner_pid_ == getpid()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
}

std::string PgTestServer::conninfo(const std::string& dbname) const {
  return "host=" + dir_ + " port=" + std::to_string(port_) + " user=synapse dbname=" + dbname;
}

std::string PgTestServer::url(const std::string& dbname) const {
  std::string host;
  for (const char c : dir_) {
    if (c == '/') {
      host += "%2F";
    } else {
      host += c;
    }
  }
  return "postgresql://synapse@" + host + ":" + std::to_string(port_) + "/" + dbname;
}

Result<std::string> PgTestServer::create_database() {
  SYN_ASSIGN_OR_RETURN(PgDb admin, PgDb::connect(conninfo("postgres")));
  const std::string name = "t" + std::to_string(getpid()) + "_" + std::to_string(next_database_++);
  SYN_RETURN_IF_ERROR(admin.exec("CREATE DATABASE " + name));
  return name;
}

Status PgTestServer::terminate_connections(const std::string& dbname) {
  SYN_ASSIGN_OR_RETURN(PgDb admin, PgDb::connect(conninfo("postgres")));
  return admin
      .query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND "
          "pid <> pg_backend_pid()",
          PgParams().add(dbname))
      .status();
}

}  // namespace synapse::testing
