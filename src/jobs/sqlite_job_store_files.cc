// SPDX-License-Identifier: Apache-2.0
// SqliteJobStore: the files of OpenAI's /v1/files (batch input files). Output and error files are
// not stored here; the server presents them as views of a batch's result pages.
#include <algorithm>

#include "jobs/job_store_common.h"
#include "jobs/sqlite_job_store.h"

namespace synapse::jobs {
namespace {

constexpr std::string_view kFileColumns = "id, filename, purpose, bytes, created_ms";

StoredFile read_file(const SqliteStatement& row) {
  return StoredFile{.id = row.column_text(0),
                    .filename = row.column_text(1),
                    .purpose = row.column_text(2),
                    .bytes = row.column_int(3),
                    .created_ms = row.column_int(4)};
}

}  // namespace

Result<StoredFile> SqliteJobStore::create_file(std::string_view filename, std::string_view purpose,
                                               std::string_view content) {
  SYN_RETURN_IF_ERROR(check_new_file(filename, purpose, content.size(), options_.max_file_bytes));
  const std::lock_guard lock(mutex_);
  StoredFile file{.id = new_file_id(),
                  .filename = std::string(filename),
                  .purpose = std::string(purpose),
                  .bytes = static_cast<int64_t>(content.size()),
                  .created_ms = now_ms()};
  SYN_ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::begin(db_));
  SYN_ASSIGN_OR_RETURN(
      SqliteStatement insert,
      db_.prepare("INSERT INTO files(id, filename, purpose, bytes, content, created_ms) "
                  "VALUES (?, ?, ?, ?, ?, ?)"));
  insert.bind(1, file.id)
      .bind(2, file.filename)
      .bind(3, file.purpose)
      .bind(4, file.bytes)
      .bind(5, content)
      .bind(6, file.created_ms);
  SYN_RETURN_IF_ERROR(insert.run());
  SYN_RETURN_IF_ERROR(txn.commit());
  return file;
}

Result<StoredFile> SqliteJobStore::get_file(std::string_view file_id) {
  const std::lock_guard lock(mutex_);
  SYN_ASSIGN_OR_RETURN(SqliteStatement select, db_.prepare("SELECT " + std::string(kFileColumns) +
                                                           " FROM files WHERE id = ?"));
  select.bind(1, file_id);
  SYN_ASSIGN_OR_RETURN(const bool found, select.step());
  if (!found) return file_not_found(file_id);
  return read_file(select);
}

Result<std::string> SqliteJobStore::file_content(std::string_view file_id) {
  const std::lock_guard lock(mutex_);
  SYN_ASSIGN_OR_RETURN(SqliteStatement select,
                       db_.prepare("SELECT content FROM files WHERE id = ?"));
  select.bind(1, file_id);
  SYN_ASSIGN_OR_RETURN(const bool found, select.step());
  if (!found) return file_not_found(file_id);
  return select.column_text(0);
}

Result<std::vector<StoredFile>> SqliteJobStore::list_files(const FileFilter& filter) {
  const std::lock_guard lock(mutex_);
  std::string sql = "SELECT " + std::string(kFileColumns) + " FROM files WHERE 1";
  if (filter.purpose) sql += " AND purpose = ?1";
  if (filter.after) {
    sql += filter.oldest_first ? " AND seq > (SELECT seq FROM files WHERE id = ?2)"
                               : " AND seq < (SELECT seq FROM files WHERE id = ?2)";
  }
  sql += filter.oldest_first ? " ORDER BY seq LIMIT ?3" : " ORDER BY seq DESC LIMIT ?3";
  SYN_ASSIGN_OR_RETURN(SqliteStatement select, db_.prepare(sql));
  if (filter.purpose) select.bind(1, *filter.purpose);
  if (filter.after) select.bind(2, *filter.after);
  select.bind(3, std::clamp<int64_t>(filter.limit, 0, 100'000));
  std::vector<StoredFile> files;
  while (true) {
    SYN_ASSIGN_OR_RETURN(const bool row, select.step());
    if (!row) break;
    files.push_back(read_file(select));
  }
  return files;
}

Status SqliteJobStore::delete_file(std::string_view file_id) {
  const std::lock_guard lock(mutex_);
  SYN_ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::begin(db_));
  SYN_ASSIGN_OR_RETURN(SqliteStatement remove, db_.prepare("DELETE FROM files WHERE id = ?"));
  SYN_RETURN_IF_ERROR(remove.bind(1, file_id).run());
  if (db_.changes() == 0) return file_not_found(file_id);
  return txn.commit();
}

}  // namespace synapse::jobs
