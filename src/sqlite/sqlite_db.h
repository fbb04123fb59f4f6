// SPDX-License-Identifier: Apache-2.0
// A thin RAII layer over the SQLite C API: a connection, prepared statements with typed binds and
// columns, and transactions that roll back unless committed. Errors become Status values with
// transient codes where waiting or an operator can fix them: SQLITE_BUSY after the busy timeout is
// `unavailable`, a full disk (or the page limit) `storage_full`, a read-only file
// `storage_read_only`. A connection belongs to one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace synapse {

class SqliteStatement;
struct SqliteWalSnapshot;  // sqlite_db.cc: the WAL's state before opening

class SqliteDb {
 public:
  // Opens (creating) a database file in WAL mode with foreign keys on and the given busy timeout.
  // An existing file this process cannot write (or whose directory cannot hold the -wal and -shm
  // files) opens read-only instead: read_only() is true and writes fail with storage_read_only.
  // Logs an error line when the WAL turns out to have been removed or damaged since the last
  // process used it (the transactions in it are gone; SQLite itself says nothing).
  static Result<SqliteDb> open(const std::string& path, int busy_timeout_ms);

  SqliteDb(SqliteDb&&) noexcept = default;
  SqliteDb& operator=(SqliteDb&&) noexcept = default;
  ~SqliteDb() = default;

  Status exec(std::string_view sql);
  Result<SqliteStatement> prepare(std::string_view sql);
  const std::string& path() const { return path_; }
  // Rows changed by the last INSERT, UPDATE or DELETE.
  int64_t changes() const;
  // True when SQLite opened the file read-only (e.g. the file is not writable).
  bool read_only() const;
  // Caps the database at this many pages (PRAGMA max_page_count): writes past it fail with
  // `storage_full`, which is how a quota, or a full disk in tests, looks to callers.
  Status set_max_page_count(int64_t pages);

  Status error(std::string_view what) const;

 private:
  SqliteDb() = default;
  static Result<SqliteDb> open_connection(const std::string& path, const std::string& name,
                                          int flags, int busy_timeout_ms);
  static Result<SqliteDb> open_read_only(const std::string& path, int busy_timeout_ms,
                                         const Status& why);
  void check_wal_recovery(const SqliteWalSnapshot& before);
  struct Closer {
    void operator()(sqlite3* db) const;
  };
  std::unique_ptr<sqlite3, Closer> db_;
  std::string path_;
  friend class SqliteStatement;
};

class SqliteStatement {
 public:
  SqliteStatement(SqliteStatement&&) noexcept = default;
  SqliteStatement& operator=(SqliteStatement&&) noexcept = default;
  ~SqliteStatement() = default;

  // Binds are 1-based, as in SQL.
  SqliteStatement& bind(int index, std::string_view text);
  SqliteStatement& bind(int index, int64_t value);
  SqliteStatement& bind_null(int index);
  // True while a row is available; false when done.
  Result<bool> step();
  // Runs a statement that returns no rows.
  Status run();
  // Makes the statement ready to run again with new binds (e.g. one insert per row).
  void reset();

  std::string column_text(int index) const;
  int64_t column_int(int index) const;
  std::optional<int64_t> column_optional_int(int index) const;
  std::optional<std::string> column_optional_text(int index) const;

 private:
  SqliteStatement(const SqliteDb* db, sqlite3_stmt* statement) : db_(db), statement_(statement) {}
  struct Finalizer {
    void operator()(sqlite3_stmt* statement) const;
  };
  const SqliteDb* db_;
  std::unique_ptr<sqlite3_stmt, Finalizer> statement_;
  friend class SqliteDb;
};

// BEGIN IMMEDIATE (takes the write lock up front, so two writers never deadlock on an upgrade);
// rolls back on destruction unless commit() succeeded.
class SqliteTransaction {
 public:
  static Result<SqliteTransaction> begin(SqliteDb& db);
  SqliteTransaction(SqliteTransaction&& other) noexcept;
  SqliteTransaction& operator=(SqliteTransaction&&) = delete;
  SqliteTransaction(const SqliteTransaction&) = delete;
  ~SqliteTransaction();
  Status commit();

 private:
  explicit SqliteTransaction(SqliteDb* db) : db_(db) {}
  SqliteDb* db_;
};

}  // namespace synapse
