// SPDX-License-Identifier: Apache-2.0
#include "sqlite/sqlite_db.h"

#include <sqlite3.h>

#include <string>
#include <utility>

namespace synapse {

void SqliteDb::Closer::operator()(sqlite3* db) const { sqlite3_close_v2(db); }
void SqliteStatement::Finalizer::operator()(sqlite3_stmt* statement) const {
  sqlite3_finalize(statement);
}

Status SqliteDb::error(std::string_view what) const {
  const int code = sqlite3_extended_errcode(db_.get()) & 0xFF;
  ErrorCode mapped = ErrorCode::kInternal;
  switch (code) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      mapped = ErrorCode::kUnavailable;
      break;
    case SQLITE_FULL:
      mapped = ErrorCode::kStorageFull;
      break;
    case SQLITE_READONLY:
      mapped = ErrorCode::kStorageReadOnly;
      break;
    case SQLITE_PERM:
      mapped = ErrorCode::kPermissionDenied;
      break;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
      mapped = ErrorCode::kIoError;
      break;
    default:
      break;
  }
  return Status(mapped, "sqlite: " + std::string(what) + ": " + sqlite3_errmsg(db_.get()),
                ErrorWhere{.path = path_});
}

Result<SqliteDb> SqliteDb::open(const std::string& path, int busy_timeout_ms) {
  SqliteDb db;
  db.path_ = path;
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  db.db_.reset(raw);
  if (rc != SQLITE_OK) {
    if (raw == nullptr) return Status(ErrorCode::kResourceExhausted, "sqlite: out of memory");
    return db.error("open");
  }
  sqlite3_busy_timeout(raw, busy_timeout_ms);
  // WAL: readers never block the writer and a crash leaves a consistent database; FULL makes a
  // commit durable before it returns (the store commits rarely, so the fsync is cheap).
  SYN_RETURN_IF_ERROR(db.exec("PRAGMA journal_mode=WAL"));
  SYN_RETURN_IF_ERROR(db.exec("PRAGMA synchronous=FULL"));
  SYN_RETURN_IF_ERROR(db.exec("PRAGMA foreign_keys=ON"));
  return db;
}

Status SqliteDb::exec(std::string_view sql) {
  const std::string text(sql);
  if (sqlite3_exec(db_.get(), text.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    return error(text);
  }
  return ok_status();
}

int64_t SqliteDb::changes() const { return sqlite3_changes64(db_.get()); }

bool SqliteDb::read_only() const { return sqlite3_db_readonly(db_.get(), "main") == 1; }

Status SqliteDb::set_max_page_count(int64_t pages) {
  return exec("PRAGMA max_page_count=" + std::to_string(pages));
}

Result<SqliteStatement> SqliteDb::prepare(std::string_view sql) {
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(db_.get(), sql.data(), static_cast<int>(sql.size()), &statement,
                         nullptr) != SQLITE_OK) {
    return error(sql);
  }
  return SqliteStatement(this, statement);
}

SqliteStatement& SqliteStatement::bind(int index, std::string_view text) {
  sqlite3_bind_text(statement_.get(), index, text.data(), static_cast<int>(text.size()),
                    SQLITE_TRANSIENT);
  return *this;
}

SqliteStatement& SqliteStatement::bind(int index, int64_t value) {
  sqlite3_bind_int64(statement_.get(), index, value);
  return *this;
}

SqliteStatement& SqliteStatement::bind_null(int index) {
  sqlite3_bind_null(statement_.get(), index);
  return *this;
}

Result<bool> SqliteStatement::step() {
  const int rc = sqlite3_step(statement_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return db_->error(sqlite3_sql(statement_.get()));
}

Status SqliteStatement::run() {
  SYN_ASSIGN_OR_RETURN(const bool row, step());
  (void)row;
  return ok_status();
}

void SqliteStatement::reset() {
  sqlite3_reset(statement_.get());
  sqlite3_clear_bindings(statement_.get());
}

std::optional<std::string> SqliteStatement::column_optional_text(int index) const {
  if (sqlite3_column_type(statement_.get(), index) == SQLITE_NULL) return std::nullopt;
  return column_text(index);
}

std::string SqliteStatement::column_text(int index) const {
  const unsigned char* text = sqlite3_column_text(statement_.get(), index);
  if (text == nullptr) return {};
  return {reinterpret_cast<const char*>(text),
          static_cast<size_t>(sqlite3_column_bytes(statement_.get(), index))};
}

int64_t SqliteStatement::column_int(int index) const {
  return sqlite3_column_int64(statement_.get(), index);
}

std::optional<int64_t> SqliteStatement::column_optional_int(int index) const {
  if (sqlite3_column_type(statement_.get(), index) == SQLITE_NULL) return std::nullopt;
  return column_int(index);
}

Result<SqliteTransaction> SqliteTransaction::begin(SqliteDb& db) {
  SYN_RETURN_IF_ERROR(db.exec("BEGIN IMMEDIATE"));
  return SqliteTransaction(&db);
}

SqliteTransaction::SqliteTransaction(SqliteTransaction&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)) {}

SqliteTransaction::~SqliteTransaction() {
  if (db_ != nullptr) (void)db_->exec("ROLLBACK");
}

Status SqliteTransaction::commit() {
  if (db_ == nullptr) return Status(ErrorCode::kInternal, "commit of a finished transaction");
  Status status = db_->exec("COMMIT");
  if (status.ok()) db_ = nullptr;
  return status;
}

}  // namespace synapse
