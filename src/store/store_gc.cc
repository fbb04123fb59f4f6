// SPDX-License-Identifier: Apache-2.0
// Removal and garbage collection. Both delete a blob only while holding its exclusive flock (so
// never under a lease) and inside a SQLite write transaction (so never while an import renames a
// blob of the same digest into place); the file is unlinked before the row's deletion commits,
// and a crash in between leaves a row without a file, which lookups report and gc removes.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include "store/model_store.h"
#include "store/store_internal.h"

namespace synapse {
namespace {

std::string pid_list(const std::vector<int>& pids) {
  std::string out;
  for (const int pid : pids) out += (out.empty() ? "" : ", ") + std::to_string(pid);
  return out;
}

Status in_use(std::string_view ref, const std::string& path) {
  const std::vector<int> holders = file_lock_holders(path);
  std::string who = holders.empty()
                        ? "another process"
                        : (holders.size() == 1 ? "process " : "processes ") + pid_list(holders);
  return Status(ErrorCode::kUnavailable,
                "model '" + std::string(ref) + "' is in use by " + who +
                    "; it can be removed once that ends (--wait SECONDS waits for it)",
                ErrorWhere{.path = path});
}

Status unlink_file(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Status(ErrorCode::kIoError, std::string("cannot delete: ") + std::strerror(errno),
                  ErrorWhere{.path = path});
  }
  return ok_status();
}

// mtime in unix seconds, or nullopt when the file is gone.
std::optional<int64_t> modified_at(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<int64_t>(st.st_mtime);
}

}  // namespace

Result<RemoveResult> ModelStore::remove(std::string_view ref, const RemoveOptions& options) {
  const auto deadline = std::chrono::steady_clock::now() + options.wait;
  while (true) {
    Result<RemoveResult> result = try_remove(ref);
    if (result.ok() || result.status().code() != ErrorCode::kUnavailable ||
        std::chrono::steady_clock::now() >= deadline) {
      return result;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Result<RemoveResult> ModelStore::try_remove(std::string_view ref) {
  RemoveResult result;
  SYN_ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::begin(db_));
  SYN_ASSIGN_OR_RETURN(const std::string digest, resolve_digest(ref));
  SYN_ASSIGN_OR_RETURN(SqliteStatement alias_select,
                       db_.prepare("SELECT name FROM aliases WHERE digest = ? ORDER BY name"));
  alias_select.bind(1, digest);
  std::vector<std::string> aliases;
  while (true) {
    SYN_ASSIGN_OR_RETURN(const bool row, alias_select.step());
    if (!row) break;
    aliases.push_back(alias_select.column_text(0));
  }
  const bool by_alias = std::find(aliases.begin(), aliases.end(), ref) != aliases.end();
  const bool delete_blob = !by_alias || aliases.size() == 1;
  FileLock exclusive;
  if (delete_blob) {
    const std::string path = blob_path(digest);
    Result<FileLock> lock = FileLock::try_lock(path, FileLock::Mode::kExclusive);
    if (!lock.ok() && lock.status().code() == ErrorCode::kUnavailable) return in_use(ref, path);
    if (lock.ok()) exclusive = std::move(lock).value();
    SYN_ASSIGN_OR_RETURN(SqliteStatement drop_aliases,
                         db_.prepare("DELETE FROM aliases WHERE digest = ?"));
    drop_aliases.bind(1, digest);
    SYN_RETURN_IF_ERROR(drop_aliases.run());
    SYN_ASSIGN_OR_RETURN(std::optional<StoredModel> blob, find_blob("digest", digest));
    SYN_ASSIGN_OR_RETURN(SqliteStatement drop_blob,
                         db_.prepare("DELETE FROM blobs WHERE digest = ?"));
    drop_blob.bind(1, digest);
    SYN_RETURN_IF_ERROR(drop_blob.run());
    SYN_RETURN_IF_ERROR(unlink_file(path));
    result.aliases_removed = aliases;
    result.blob_deleted = digest;
    result.bytes_freed = blob ? blob->bytes : 0;
  } else {
    SYN_ASSIGN_OR_RETURN(SqliteStatement drop_alias,
                         db_.prepare("DELETE FROM aliases WHERE name = ?"));
    drop_alias.bind(1, ref);
    SYN_RETURN_IF_ERROR(drop_alias.run());
    result.aliases_removed = {std::string(ref)};
  }
  SYN_RETURN_IF_ERROR(txn.commit());
  return result;
}

Result<GcReport> ModelStore::gc(const GcOptions& options) {
  GcReport report;
  const int64_t now = store_now_seconds();
  const int64_t due = now - options.grace.count();
  SYN_ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::begin(db_));
  std::vector<StoredModel> blobs;
  {
    SYN_ASSIGN_OR_RETURN(
        SqliteStatement select,
        db_.prepare("SELECT digest, bytes, source_sha256, source_name, architecture, graph_hash, "
                    "imported_at, unreferenced_since, "
                    "EXISTS (SELECT 1 FROM aliases WHERE aliases.digest = blobs.digest) "
                    "FROM blobs ORDER BY digest"));
    while (true) {
      SYN_ASSIGN_OR_RETURN(const bool row, select.step());
      if (!row) break;
      StoredModel m = read_blob_row(select);
      if (select.column_int(8) != 0) m.aliases = {""};  // referenced; names not needed here
      blobs.push_back(std::move(m));
    }
  }
  const auto set_mark = [this](const std::string& digest, std::optional<int64_t> mark) {
    Result<SqliteStatement> update =
        db_.prepare("UPDATE blobs SET unreferenced_since = ? WHERE digest = ?");
    if (!update.ok()) return update.status();
    if (mark) {
      update->bind(1, *mark);
    } else {
      update->bind_null(1);
    }
    update->bind(2, digest);
    return update->run();
  };
  const auto delete_row = [this](const std::string& digest) {
    Result<SqliteStatement> drop = db_.prepare("DELETE FROM blobs WHERE digest = ?");
    if (!drop.ok()) return drop.status();
    drop->bind(1, digest);
    return drop->run();
  };
  std::vector<FileLock> held;  // exclusive locks on deleted blobs, kept until the commit
  std::set<std::string> known;
  for (const StoredModel& blob : blobs) {
    known.insert(blob.digest + ".synapse");
    const std::string path = blob_path(blob.digest);
    const bool referenced = !blob.aliases.empty();
    if (!std::filesystem::exists(path)) {
      // A lost blob file (deleted by hand, or a crash between unlink and commit).
      report.missing_removed.push_back(blob.digest);
      if (!options.dry_run) {
        SYN_ASSIGN_OR_RETURN(SqliteStatement drop_aliases,
                             db_.prepare("DELETE FROM aliases WHERE digest = ?"));
        drop_aliases.bind(1, blob.digest);
        SYN_RETURN_IF_ERROR(drop_aliases.run());
        SYN_RETURN_IF_ERROR(delete_row(blob.digest));
      }
      continue;
    }
    if (referenced) {
      if (blob.unreferenced_since) {
        report.unmarked.push_back(blob.digest);
        if (!options.dry_run) SYN_RETURN_IF_ERROR(set_mark(blob.digest, std::nullopt));
      }
      continue;
    }
    // Phase one: mark. Phase two: delete what was marked at least `grace` ago.
    const int64_t marked_at = blob.unreferenced_since.value_or(now);
    if (!blob.unreferenced_since) {
      report.marked.push_back(blob.digest);
      if (!options.dry_run) SYN_RETURN_IF_ERROR(set_mark(blob.digest, now));
    }
    if (marked_at > due) continue;
    Result<FileLock> lock = FileLock::try_lock(path, FileLock::Mode::kExclusive);
    if (!lock.ok()) {
      if (lock.status().code() != ErrorCode::kUnavailable) return lock.status();
      report.kept_leased.push_back(blob.digest);
      continue;
    }
    report.deleted.push_back(blob.digest);
    report.bytes_freed += blob.bytes;
    if (!options.dry_run) {
      SYN_RETURN_IF_ERROR(delete_row(blob.digest));
      SYN_RETURN_IF_ERROR(unlink_file(path));
      held.push_back(std::move(lock).value());
    }
  }
  // Stray files: temporary files of imports that died, blob files whose row never committed.
  for (const std::string sub : {"/tmp", "/blobs"}) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(directory_ + sub, error)) {
      const std::string path = entry.path().string();
      if (!entry.is_regular_file() || known.count(entry.path().filename().string()) > 0) continue;
      const std::optional<int64_t> mtime = modified_at(path);
      if (!mtime || *mtime > due) continue;
      Result<FileLock> lock = FileLock::try_lock(path, FileLock::Mode::kExclusive);
      if (!lock.ok()) continue;  // an import in progress, or already gone
      report.stray_files_removed.push_back(path);
      if (!options.dry_run) SYN_RETURN_IF_ERROR(unlink_file(path));
    }
  }
  if (options.dry_run) return report;  // the transaction rolls back
  SYN_RETURN_IF_ERROR(txn.commit());
  return report;
}

}  // namespace synapse
