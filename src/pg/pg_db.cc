// SPDX-License-Identifier: Apache-2.0
#include "pg/pg_db.h"

#include <libpq-fe.h>

#include <cstdlib>
#include <utility>

namespace synapse {
namespace {

// SQLSTATE classes and codes (PostgreSQL, Appendix A) that a retry, or an operator, can fix.
ErrorCode code_for_sqlstate(std::string_view state) {
  if (state.starts_with("08")) return ErrorCode::kUnavailable;               // connection exception
  if (state == "40001" || state == "40P01") return ErrorCode::kUnavailable;  // serialization
  if (state == "53100") return ErrorCode::kStorageFull;                      // disk full
  if (state.starts_with("53")) return ErrorCode::kUnavailable;               // memory, connections
  if (state == "25006") return ErrorCode::kStorageReadOnly;      // read-only (a standby)
  if (state.starts_with("57P")) return ErrorCode::kUnavailable;  // shutdown, starting up
  if (state == "55P03") return ErrorCode::kUnavailable;          // lock not available
  if (state == "23505") return ErrorCode::kAlreadyExists;        // unique violation
  return ErrorCode::kInternal;
}

std::string trimmed(const char* message) {
  std::string text = message != nullptr ? message : "";
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

bool is_postgres_url(std::string_view location) {
  return location.starts_with("postgresql://") || location.starts_with("postgres://");
}

std::string redacted_conninfo(const std::string& conninfo) {
  char* parse_error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &parse_error);
  if (parse_error != nullptr) PQfreemem(parse_error);
  if (options == nullptr) return "postgresql://(unparsable)";
  std::string host;
  std::string port;
  std::string user;
  std::string dbname;
  for (const PQconninfoOption* option = options; option->keyword != nullptr; ++option) {
    if (option->val == nullptr) continue;
    const std::string_view keyword = option->keyword;
    if (keyword == "host") host = option->val;
    if (keyword == "port") port = option->val;
    if (keyword == "user") user = option->val;
    if (keyword == "dbname") dbname = option->val;
  }
  PQconninfoFree(options);
  std::string name = "postgresql://";
  if (!user.empty()) name += user + "@";
  name += host;  // a socket directory shows as a path: still no secret
  if (!port.empty()) name += ":" + port;
  if (!dbname.empty()) name += "/" + dbname;
  return name;
}

PgParams& PgParams::add(std::string_view text) {
  values_.emplace_back(std::string(text));
  formats_.push_back(0);
  return *this;
}

PgParams& PgParams::add(int64_t value) { return add(std::to_string(value)); }

PgParams& PgParams::add_optional(const std::optional<std::string>& text) {
  return text ? add(std::string_view(*text)) : add_null();
}

PgParams& PgParams::add_null() {
  values_.emplace_back(std::nullopt);
  formats_.push_back(0);
  return *this;
}

PgParams& PgParams::add_bytes(std::string_view bytes) {
  values_.emplace_back(std::string(bytes));
  formats_.push_back(1);
  return *this;
}

void PgResult::Clear::operator()(pg_result* result) const { PQclear(result); }

int PgResult::rows() const { return PQntuples(result_.get()); }

int64_t PgResult::affected() const {
  const char* count = PQcmdTuples(result_.get());
  return count != nullptr && *count != '\0' ? std::strtoll(count, nullptr, 10) : 0;
}

bool PgResult::is_null(int row, int column) const {
  return PQgetisnull(result_.get(), row, column) != 0;
}

std::string PgResult::text(int row, int column) const {
  return std::string(PQgetvalue(result_.get(), row, column),
                     static_cast<size_t>(PQgetlength(result_.get(), row, column)));
}

int64_t PgResult::integer(int row, int column) const {
  return is_null(row, column) ? 0
                              : std::strtoll(PQgetvalue(result_.get(), row, column), nullptr, 10);
}

std::optional<int64_t> PgResult::optional_integer(int row, int column) const {
  if (is_null(row, column)) return std::nullopt;
  return integer(row, column);
}

std::optional<std::string> PgResult::optional_text(int row, int column) const {
  if (is_null(row, column)) return std::nullopt;
  return text(row, column);
}

std::string PgResult::bytes(int row, int column) const {
  size_t length = 0;
  unsigned char* raw = PQunescapeBytea(
      reinterpret_cast<const unsigned char*>(PQgetvalue(result_.get(), row, column)), &length);
  if (raw == nullptr) return {};
  std::string value(reinterpret_cast<const char*>(raw), length);
  PQfreemem(raw);
  return value;
}

void PgDb::Finish::operator()(pg_conn* conn) const { PQfinish(conn); }

Result<PgDb> PgDb::connect(const std::string& conninfo) {
  PgDb db;
  db.conninfo_ = conninfo;
  db.name_ = redacted_conninfo(conninfo);
  db.conn_.reset(PQconnectdb(conninfo.c_str()));
  if (db.conn_ == nullptr) {
    return Status(ErrorCode::kResourceExhausted, "libpq could not allocate a connection",
                  ErrorWhere{.path = db.name_});
  }
  if (PQstatus(db.conn_.get()) != CONNECTION_OK) {
    // libpq's message names the host and the reason (refused, authentication failed); it never
    // repeats the password.
    return Status(ErrorCode::kUnavailable,
                  "cannot connect to PostgreSQL: " + trimmed(PQerrorMessage(db.conn_.get())),
                  ErrorWhere{.path = db.name_});
  }
  return db;
}

bool PgDb::broken() const { return conn_ == nullptr || PQstatus(conn_.get()) != CONNECTION_OK; }

Status PgDb::reconnect() {
  PQreset(conn_.get());
  if (PQstatus(conn_.get()) != CONNECTION_OK) {
    return Status(ErrorCode::kUnavailable,
                  "cannot reconnect to PostgreSQL: " + trimmed(PQerrorMessage(conn_.get())),
                  ErrorWhere{.path = name_});
  }
  return ok_status();
}

int PgDb::backend_pid() const { return PQbackendPID(conn_.get()); }

Status PgDb::error(std::string_view what, const pg_result* result) const {
  const char* state = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  std::string message = trimmed(result != nullptr ? PQresultErrorMessage(result) : nullptr);
  if (message.empty()) message = trimmed(PQerrorMessage(conn_.get()));
  // Without a SQLSTATE the error came from libpq itself: the connection is gone.
  const ErrorCode code =
      state != nullptr && !broken() ? code_for_sqlstate(state) : ErrorCode::kUnavailable;
  std::string head(what.substr(0, 60));
  if (what.size() > 60) head += "…";
  return Status(code, "PostgreSQL: " + message + " (in: " + head + ")", ErrorWhere{.path = name_});
}

Result<PgResult> PgDb::finish(std::string_view sql, pg_result* raw) {
  PgResult result(raw);
  const ExecStatusType status = PQresultStatus(raw);
  if (raw == nullptr || (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)) {
    return error(sql, raw);
  }
  return result;
}

Status PgDb::exec(std::string_view sql) {
  if (broken()) return error(sql, nullptr);
  const std::string text(sql);
  return finish(sql, PQexec(conn_.get(), text.c_str())).status();
}

Result<PgResult> PgDb::query(std::string_view sql, const PgParams& params) {
  if (broken()) return error(sql, nullptr);
  const std::string text(sql);
  std::vector<const char*> values;
  std::vector<int> lengths;
  values.reserve(params.size());
  for (const std::optional<std::string>& value : params.values_) {
    values.push_back(value ? value->data() : nullptr);
    lengths.push_back(value ? static_cast<int>(value->size()) : 0);
  }
  return finish(
      sql, PQexecParams(conn_.get(), text.c_str(), static_cast<int>(params.size()), nullptr,
                        values.data(), lengths.data(), params.formats_.data(), /*resultFormat=*/0));
}

Result<PgTransaction> PgTransaction::begin(PgDb& db) {
  SYN_RETURN_IF_ERROR(db.exec("BEGIN"));
  return PgTransaction(&db);
}

PgTransaction::PgTransaction(PgTransaction&& other) noexcept : db_(other.db_) {
  other.db_ = nullptr;
}

PgTransaction::~PgTransaction() {
  if (db_ != nullptr && !db_->broken()) (void)db_->exec("ROLLBACK");
}

Status PgTransaction::commit() {
  PgDb* db = std::exchange(db_, nullptr);
  return db->exec("COMMIT");
}

}  // namespace synapse
