// SPDX-License-Identifier: Apache-2.0
#include "sqlite/sqlite_db.h"

#include <sqlite3.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "base/log.h"

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

// What the WAL's shared-memory index (-shm) said before this connection opened the database:
// frames committed to the WAL but not yet copied into the database file. Read before SQLite runs
// recovery, which rebuilds the index from the WAL file as it finds it. Layout: the wal-index
// header (sqlite.org/walformat.html): iVersion u32 at 0, isInit u8 at 12, mxFrame u32 at 16; the
// checkpoint info's nBackfill u32 at 96; native byte order.
struct SqliteWalSnapshot {
  bool wal_exists = false;
  uint64_t wal_bytes = 0;
  uint32_t committed_frames = 0;  // mxFrame per the -shm, 0 when unknown
  uint32_t unsaved_frames = 0;    // mxFrame - nBackfill: only in the WAL
};

namespace {

SqliteWalSnapshot inspect_wal(const std::string& path) {
  SqliteWalSnapshot out;
  std::error_code error;
  out.wal_bytes = std::filesystem::file_size(path + "-wal", error);
  out.wal_exists = !error;
  if (!out.wal_exists) out.wal_bytes = 0;
  std::ifstream shm(path + "-shm", std::ios::binary);
  std::array<char, 100> header{};
  if (!shm.read(header.data(), header.size())) return out;
  uint32_t version = 0, max_frame = 0, backfill = 0;
  std::memcpy(&version, header.data(), 4);
  std::memcpy(&max_frame, header.data() + 16, 4);
  std::memcpy(&backfill, header.data() + 96, 4);
  constexpr uint32_t kWalIndexVersion = 3007000;
  if (version != kWalIndexVersion || header[12] != 1 || max_frame < backfill) return out;
  out.committed_frames = max_frame;
  out.unsaved_frames = max_frame - backfill;
  return out;
}

bool is_read_only_failure(ErrorCode code) {
  return code == ErrorCode::kStorageReadOnly || code == ErrorCode::kPermissionDenied ||
         code == ErrorCode::kIoError;
}

// file: URI for sqlite3_open_v2 (SQLITE_OPEN_URI): '%', '?' and '#' escaped.
std::string file_uri(const std::string& path, std::string_view query) {
  std::string uri = "file:";
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      static constexpr char kHex[] = "0123456789ABCDEF";
      uri += '%';
      uri += kHex[(static_cast<unsigned char>(c) >> 4) & 0xF];
      uri += kHex[static_cast<unsigned char>(c) & 0xF];
    } else {
      uri += c;
    }
  }
  return uri + "?" + std::string(query);
}

}  // namespace

Result<SqliteDb> SqliteDb::open_connection(const std::string& path, const std::string& name,
                                           int flags, int busy_timeout_ms) {
  SqliteDb db;
  db.path_ = path;
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(name.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  db.db_.reset(raw);
  if (rc != SQLITE_OK) {
    if (raw == nullptr) return Status(ErrorCode::kResourceExhausted, "sqlite: out of memory");
    return db.error("open");
  }
  sqlite3_busy_timeout(raw, busy_timeout_ms);
  return db;
}

Result<SqliteDb> SqliteDb::open(const std::string& path, int busy_timeout_ms) {
  const SqliteWalSnapshot before = inspect_wal(path);
  Result<SqliteDb> opened =
      open_connection(path, path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, busy_timeout_ms);
  // WAL: readers never block the writer and a crash leaves a consistent database; FULL makes a
  // commit durable before it returns (the store commits rarely, so the fsync is cheap).
  Status setup = opened.ok() ? opened->exec("PRAGMA journal_mode=WAL") : opened.status();
  if (setup.ok()) setup = opened->exec("PRAGMA synchronous=FULL");
  if (setup.ok()) setup = opened->exec("PRAGMA foreign_keys=ON");
  if (setup.ok()) {
    opened->check_wal_recovery(before);
    return opened;
  }
  std::error_code error;
  if (!is_read_only_failure(setup.code()) || !std::filesystem::is_regular_file(path, error)) {
    return setup;
  }
  return open_read_only(path, busy_timeout_ms, setup);
}

// A database this process cannot write (the file, or the directory that must hold its -wal and
// -shm files): opened read-only so that what it holds still reads; writes fail with
// storage_read_only. With no -shm to share, a WAL database opens only as immutable: SQLite then
// takes no locks and assumes nobody writes, which holds while the directory stays read-only to
// everyone who would.
Result<SqliteDb> SqliteDb::open_read_only(const std::string& path, int busy_timeout_ms,
                                          const Status& why) {
  for (const std::string_view query : {"mode=ro", "mode=ro&immutable=1"}) {
    Result<SqliteDb> db = open_connection(path, file_uri(path, query),
                                          SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, busy_timeout_ms);
    if (!db.ok()) continue;
    if (!db->exec("SELECT count(*) FROM sqlite_master").ok()) continue;
    if (!db->exec("PRAGMA foreign_keys=ON").ok()) continue;
    log_warn(
        "sqlite: {} is not writable here ({}); opened read-only{}: reads answer, writes fail "
        "with storage_read_only",
        path, why.message(),
        query.find("immutable") != std::string_view::npos
            ? " as immutable (no -shm file can be created)"
            : "");
    return db;
  }
  return why;
}

// SQLite ignores a WAL file whose header or checksums do not verify and runs on without the
// transactions in it, silently: compare what the -shm said was committed with what recovery kept,
// and say so when they differ. Only then run quick_check (it reads the whole file, too slow for
// every start of a large database) to tell whether the database file itself is sound.
void SqliteDb::check_wal_recovery(const SqliteWalSnapshot& before) {
  int64_t wal_frames = -1;
  if (Result<SqliteStatement> checkpoint = prepare("PRAGMA wal_checkpoint(PASSIVE)");
      checkpoint.ok()) {
    Result<bool> row = checkpoint->step();
    if (row.ok() && *row) wal_frames = checkpoint->column_int(1);
  }
  if (wal_frames < 0) return;
  std::string problem;
  if (before.unsaved_frames > 0 && !before.wal_exists) {
    problem = "its WAL file was removed while it held " + std::to_string(before.unsaved_frames) +
              " committed frames not yet in the database file";
  } else if (before.unsaved_frames > 0 && wal_frames < before.committed_frames) {
    problem = "its WAL file was damaged: the shared index listed " +
              std::to_string(before.committed_frames) + " committed frames, recovery kept " +
              std::to_string(wal_frames);
  } else if (before.committed_frames == 0 && wal_frames == 0 && before.wal_bytes > 32 + 24 + 512) {
    problem = "its WAL file (" + std::to_string(before.wal_bytes) +
              " bytes) held frames that did not verify and were ignored";
  }
  if (problem.empty()) return;
  std::string check = "quick_check could not run";
  if (Result<SqliteStatement> quick = prepare("PRAGMA quick_check(5)"); quick.ok()) {
    std::string rows;
    while (true) {
      Result<bool> row = quick->step();
      if (!row.ok() || !*row) break;
      if (!rows.empty()) rows += "; ";
      rows += quick->column_text(0);
    }
    check = "quick_check: " + rows;
  }
  log_error(
      "sqlite: {}: {}; the transactions committed in it since the last checkpoint are lost "
      "({})",
      path_, problem, check);
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
