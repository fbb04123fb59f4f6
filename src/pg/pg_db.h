// SPDX-License-Identifier: Apache-2.0
// A thin RAII layer over libpq: a connection that reconnects after a loss, parameterised queries
// with typed columns, and transactions that roll back unless committed. Errors become Status
// values by SQLSTATE, transient where retrying (or an operator) can fix them. A connection belongs
// to one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

struct pg_conn;
struct pg_result;

namespace synapse {

// True for what PgDb::connect takes as a PostgreSQL location: a postgresql:// or postgres:// URL.
// Anything else (a path) is the caller's to interpret.
bool is_postgres_url(std::string_view location);

// `conninfo` for logs and error messages: host, port, user and database as libpq parses them,
// never the password (nor any other option). A string libpq cannot parse is shown as
// "postgresql://(unparsable)".
std::string redacted_conninfo(const std::string& conninfo);

// Query parameters, sent as text (bytes as binary); $1 is the first added.
class PgParams {
 public:
  PgParams& add(std::string_view text);
  PgParams& add(const char* text) { return add(std::string_view(text)); }
  PgParams& add(int64_t value);
  PgParams& add_optional(const std::optional<std::string>& text);
  PgParams& add_null();
  // A bytea parameter: sent as binary, so any bytes (NUL included) arrive unchanged.
  PgParams& add_bytes(std::string_view bytes);
  size_t size() const { return values_.size(); }

 private:
  friend class PgDb;
  std::vector<std::optional<std::string>> values_;
  std::vector<int> formats_;  // 0 text, 1 binary
};

class PgResult {
 public:
  PgResult(PgResult&&) noexcept = default;
  PgResult& operator=(PgResult&&) noexcept = default;
  ~PgResult() = default;

  int rows() const;
  // Rows changed by an INSERT, UPDATE or DELETE.
  int64_t affected() const;
  bool is_null(int row, int column) const;
  std::string text(int row, int column) const;
  int64_t integer(int row, int column) const;  // 0 for NULL
  std::optional<int64_t> optional_integer(int row, int column) const;
  std::optional<std::string> optional_text(int row, int column) const;
  // A bytea column, decoded from libpq's text (hex) form.
  std::string bytes(int row, int column) const;

 private:
  friend class PgDb;
  struct Clear {
    void operator()(pg_result* result) const;
  };
  explicit PgResult(pg_result* result) : result_(result) {}
  std::unique_ptr<pg_result, Clear> result_;
};

class PgDb {
 public:
  // Connects with a libpq connection string or URL. Failure to reach the server is
  // `unavailable`; the message names the server without its password.
  static Result<PgDb> connect(const std::string& conninfo);

  PgDb(PgDb&&) noexcept = default;
  PgDb& operator=(PgDb&&) noexcept = default;
  ~PgDb() = default;

  // Runs one or more statements without parameters (schema, BEGIN, COMMIT).
  Status exec(std::string_view sql);
  Result<PgResult> query(std::string_view sql, const PgParams& params = {});

  // True when the connection is gone (the server went away, a failover, a network cut); the next
  // reconnect() opens a new one. Anything a lost connection had not committed is rolled back by
  // the server.
  bool broken() const;
  Status reconnect();
  // The server's backend process id (pg_terminate_backend in tests cuts this connection).
  int backend_pid() const;
  // Redacted, for messages.
  const std::string& name() const { return name_; }

 private:
  PgDb() = default;
  Status error(std::string_view what, const pg_result* result) const;
  Result<PgResult> finish(std::string_view sql, pg_result* raw);
  struct Finish {
    void operator()(pg_conn* conn) const;
  };
  std::unique_ptr<pg_conn, Finish> conn_;
  std::string conninfo_;  // holds the password, if any: never printed
  std::string name_;
};

// BEGIN (READ COMMITTED); rolled back on destruction unless commit() succeeded.
class PgTransaction {
 public:
  static Result<PgTransaction> begin(PgDb& db);
  PgTransaction(PgTransaction&& other) noexcept;
  PgTransaction& operator=(PgTransaction&&) = delete;
  PgTransaction(const PgTransaction&) = delete;
  ~PgTransaction();
  // A COMMIT whose answer was lost (the connection broke) is `unavailable`: the transaction may
  // or may not have committed, so what it wrote must be safe to find either way.
  Status commit();

 private:
  explicit PgTransaction(PgDb* db) : db_(db) {}
  PgDb* db_;
};

}  // namespace synapse
