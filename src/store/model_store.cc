// SPDX-License-Identifier: Apache-2.0
// Opening the store, importing, lookups and leases. Removal and gc are in store_gc.cc.
#include "store/model_store.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "base/atomic_file.h"
#include "base/echo.h"
#include "base/hash.h"
#include "base/mapped_file.h"
#include "base/paths.h"
#include "format/gguf/gguf_keys.h"
#include "format/package/package_file.h"
#include "format/package/package_verify.h"
#include "format/package/package_writer.h"
#include "store/store_internal.h"

namespace synapse {
namespace {

constexpr int kBusyTimeoutMs = 10'000;
constexpr int kSchemaVersion = 1;
constexpr uint64_t kChunkBytes = 8 << 20;

// Version 1. Later versions append migrations; a store written by a newer build is refused.
constexpr std::string_view kSchemaV1 = R"sql(
CREATE TABLE blobs(
  digest TEXT PRIMARY KEY,          -- SHA-256 of the package file, hex
  bytes INTEGER NOT NULL,
  source_sha256 TEXT NOT NULL,      -- SHA-256 of the file it was prepared from
  source_name TEXT NOT NULL,
  architecture TEXT NOT NULL,
  graph_hash TEXT NOT NULL,
  format_version INTEGER NOT NULL,  -- package format version
  imported_at INTEGER NOT NULL,     -- unix seconds
  unreferenced_since INTEGER        -- gc mark: unix seconds since it lost its last alias
);
CREATE INDEX blobs_by_source ON blobs(source_sha256);
CREATE TABLE aliases(
  name TEXT PRIMARY KEY,
  digest TEXT NOT NULL REFERENCES blobs(digest),
  created_at INTEGER NOT NULL
);
CREATE INDEX aliases_by_digest ON aliases(digest);
)sql";

constexpr std::string_view kBlobColumns =
    "digest, bytes, source_sha256, source_name, architecture, graph_hash, imported_at, "
    "unreferenced_since";

bool is_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// SHA-256 of a mapped file, reporting progress and releasing pages behind the cursor.
Sha256Digest hash_mapping(const MappedFile& file, std::string_view stage,
                          const ImportOptions& options) {
  Sha256Hasher hasher;
  const std::span<const uint8_t> bytes = file.bytes();
  file.advise(AccessHint::kSequential);
  for (uint64_t done = 0; done < bytes.size(); done += kChunkBytes) {
    const uint64_t n = std::min<uint64_t>(kChunkBytes, bytes.size() - done);
    hasher.update(bytes.subspan(done, n));
    file.advise(AccessHint::kDontNeed, done, n);
    if (options.progress) options.progress(stage, done + n, bytes.size());
  }
  return hasher.finish();
}

bool is_alias_character(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == ':' ||
         c == '-';
}

// The file name without its extension, made a valid alias: "My Model (v2).gguf" -> "My-Model--v2-".
std::string default_alias(const std::string& path) {
  std::string name = std::filesystem::path(path).stem().string().substr(0, 128);
  for (char& c : name) {
    if (!is_alias_character(c)) c = '-';
  }
  if (name.empty() || !std::isalnum(static_cast<unsigned char>(name[0]))) name = "m" + name;
  if (name.size() == 64 && is_hex(name)) name += "-model";  // would read as a digest
  return name.substr(0, 128);
}

}  // namespace

StoredModel read_blob_row(const SqliteStatement& row) {
  StoredModel m;
  m.digest = row.column_text(0);
  m.bytes = static_cast<uint64_t>(row.column_int(1));
  m.source_sha256 = row.column_text(2);
  m.source_name = row.column_text(3);
  m.architecture = row.column_text(4);
  m.graph_hash = row.column_text(5);
  m.imported_at = row.column_int(6);
  m.unreferenced_since = row.column_optional_int(7);
  return m;
}

int64_t store_now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Result<std::string> default_store_directory() {
  if (const char* dir = std::getenv("SYNAPSE_STORE"); dir != nullptr && *dir != '\0') {
    return std::string(dir);
  }
  SYN_ASSIGN_OR_RETURN(const std::string state, state_directory());
  return state + "/store";
}

Status check_alias_name(std::string_view name) {
  const auto bad = [&name](const std::string& why) {
    return Status(ErrorCode::kInvalidArgument, "model name '" + clip_for_echo(name) + "' " + why,
                  ErrorWhere{.field = "name"});
  };
  if (name.empty() || name.size() > 128) return bad("must have 1 to 128 characters");
  if (!std::isalnum(static_cast<unsigned char>(name[0]))) {
    return bad("must start with a letter or digit");
  }
  // '/' separates namespace segments ("hf.co/org/repo:Q4_K_M", as Ollama names pulled models);
  // each segment starts with a letter or digit, so no empty, "." or ".." segment.
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] == '/') {
      if (i + 1 >= name.size() || !std::isalnum(static_cast<unsigned char>(name[i + 1]))) {
        return bad("must have a letter or digit after each /");
      }
    } else if (!is_alias_character(name[i])) {
      return bad("may hold only letters, digits and . _ : - /");
    }
  }
  if (name.size() == 64 && is_hex(name)) return bad("would read as a digest");
  return ok_status();
}

Result<ModelStore> ModelStore::open(std::string directory) {
  if (directory.empty()) {
    SYN_ASSIGN_OR_RETURN(directory, default_store_directory());
  }
  for (const char* sub : {"", "/blobs", "/tmp"}) {
    SYN_RETURN_IF_ERROR(create_directories(directory + sub));
  }
  SYN_ASSIGN_OR_RETURN(SqliteDb db, SqliteDb::open(directory + "/store.db", kBusyTimeoutMs));
  ModelStore store(std::move(directory), std::move(db));
  SYN_RETURN_IF_ERROR(store.migrate());
  return store;
}

Status ModelStore::migrate() {
  SYN_ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::begin(db_));
  SYN_RETURN_IF_ERROR(db_.exec("CREATE TABLE IF NOT EXISTS schema_version(version INTEGER)"));
  SYN_ASSIGN_OR_RETURN(SqliteStatement select,
                       db_.prepare("SELECT MAX(version) FROM schema_version"));
  SYN_ASSIGN_OR_RETURN(const bool row, select.step());
  const std::optional<int64_t> version = row ? select.column_optional_int(0) : std::nullopt;
  if (version && *version > kSchemaVersion) {
    return Status(ErrorCode::kUnsupportedVersion,
                  "the store's schema version " + std::to_string(*version) +
                      " is newer than this build's (" + std::to_string(kSchemaVersion) + ")",
                  ErrorWhere{.path = db_.path()});
  }
  if (!version) {
    SYN_RETURN_IF_ERROR(db_.exec(kSchemaV1));
    SYN_RETURN_IF_ERROR(db_.exec("INSERT INTO schema_version(version) VALUES (1)"));
  }
  return txn.commit();
}

std::string ModelStore::blob_path(std::string_view digest) const {
  return directory_ + "/blobs/" + std::string(digest) + ".synapse";
}

Result<std::optional<StoredModel>> ModelStore::find_blob(std::string_view column,
                                                         std::string_view value) {
  SYN_ASSIGN_OR_RETURN(SqliteStatement select,
                       db_.prepare("SELECT " + std::string(kBlobColumns) + " FROM blobs WHERE " +
                                   std::string(column) + " = ? ORDER BY imported_at LIMIT 1"));
  select.bind(1, value);
  SYN_ASSIGN_OR_RETURN(const bool row, select.step());
  if (!row) return std::optional<StoredModel>();
  StoredModel m = read_blob_row(select);
  m.path = blob_path(m.digest);
  SYN_RETURN_IF_ERROR(fill_aliases(m));
  return std::optional<StoredModel>(std::move(m));
}

Status ModelStore::fill_aliases(StoredModel& model) {
  SYN_ASSIGN_OR_RETURN(SqliteStatement select,
                       db_.prepare("SELECT name FROM aliases WHERE digest = ? ORDER BY name"));
  select.bind(1, model.digest);
  model.aliases.clear();
  while (true) {
    SYN_ASSIGN_OR_RETURN(const bool row, select.step());
    if (!row) break;
    model.aliases.push_back(select.column_text(0));
  }
  return ok_status();
}

Result<std::string> ModelStore::resolve_digest(std::string_view ref) {
  SYN_ASSIGN_OR_RETURN(SqliteStatement alias,
                       db_.prepare("SELECT digest FROM aliases WHERE name = ?"));
  alias.bind(1, ref);
  SYN_ASSIGN_OR_RETURN(const bool named, alias.step());
  if (named) return alias.column_text(0);
  std::string_view prefix = ref;
  if (prefix.starts_with("sha256:")) prefix.remove_prefix(7);
  if (prefix.size() >= 8 && prefix.size() <= 64 && is_hex(prefix)) {
    SYN_ASSIGN_OR_RETURN(SqliteStatement select,
                         db_.prepare("SELECT digest FROM blobs WHERE substr(digest, 1, ?) = ? "
                                     "ORDER BY digest LIMIT 2"));
    select.bind(1, static_cast<int64_t>(prefix.size())).bind(2, prefix);
    SYN_ASSIGN_OR_RETURN(const bool first, select.step());
    if (first) {
      std::string digest = select.column_text(0);
      SYN_ASSIGN_OR_RETURN(const bool second, select.step());
      if (second) {
        return Status(ErrorCode::kInvalidArgument,
                      "digest prefix '" + clip_for_echo(prefix) + "' matches several models",
                      ErrorWhere{.field = "model"});
      }
      return digest;
    }
  }
  return Status(ErrorCode::kNotFound,
                "no model '" + clip_for_echo(ref) + "' in the store " + directory_ +
                    " (synapse models list shows what is there)",
                ErrorWhere{.field = "model"});
}

Result<StoredModel> ModelStore::find(std::string_view ref) {
  SYN_ASSIGN_OR_RETURN(const std::string digest, resolve_digest(ref));
  SYN_ASSIGN_OR_RETURN(std::optional<StoredModel> model, find_blob("digest", digest));
  if (!model) {
    return Status(ErrorCode::kNotFound, "alias '" + clip_for_echo(ref) + "' names a missing blob",
                  ErrorWhere{.field = "model"});
  }
  model->lease_holders = file_lock_holders(model->path);
  return std::move(*model);
}

Result<std::vector<StoredModel>> ModelStore::list() {
  SYN_ASSIGN_OR_RETURN(SqliteStatement select,
                       db_.prepare("SELECT " + std::string(kBlobColumns) +
                                   " FROM blobs ORDER BY imported_at, digest"));
  std::vector<StoredModel> out;
  while (true) {
    SYN_ASSIGN_OR_RETURN(const bool row, select.step());
    if (!row) break;
    out.push_back(read_blob_row(select));
  }
  for (StoredModel& m : out) {
    m.path = blob_path(m.digest);
    SYN_RETURN_IF_ERROR(fill_aliases(m));
    m.lease_holders = file_lock_holders(m.path);
  }
  return out;
}

Result<ModelLease> ModelStore::acquire_lease(std::string_view ref) {
  // A blob being deleted holds its exclusive lock for milliseconds; a lease that meets it
  // retries, and then finds the model gone (or, for an alias re-pointed meanwhile, the new one).
  // A file missing under an existing row is not a race: that fails after a few tries.
  constexpr int kBusyAttempts = 200;
  constexpr int kMissingAttempts = 3;
  int busy = 0, missing = 0;
  while (true) {
    SYN_ASSIGN_OR_RETURN(const std::string digest, resolve_digest(ref));
    Result<FileLock> lock = FileLock::try_lock(blob_path(digest), FileLock::Mode::kShared);
    if (lock.ok()) return ModelLease(digest, std::move(lock).value());
    const Status& status = lock.status();
    const bool retry = (status.code() == ErrorCode::kUnavailable && ++busy < kBusyAttempts) ||
                       (status.code() == ErrorCode::kNotFound && ++missing < kMissingAttempts);
    if (!retry) {
      return Status(status.code(),
                    "cannot lease model '" + std::string(ref) + "': " + status.message() +
                        (status.code() == ErrorCode::kNotFound
                             ? " (the blob file is missing; synapse models gc drops the entry)"
                             : ""),
                    status.where());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
}

Result<ImportResult> ModelStore::import(const std::string& path, const ImportOptions& options) {
  const std::string name = options.name.empty() ? default_alias(path) : options.name;
  SYN_RETURN_IF_ERROR(check_alias_name(name));
  SYN_ASSIGN_OR_RETURN(const std::unique_ptr<ModelFile> file, open_model_file(path));
  const MappedFile& mapping = file->mapping();
  const std::string sha = to_hex(hash_mapping(mapping, "hashing", options));
  const auto* package = dynamic_cast<const PackageFile*>(file.get());

  // Content already stored: only the alias changes.
  SYN_ASSIGN_OR_RETURN(std::optional<StoredModel> existing,
                       find_blob(package != nullptr ? "digest" : "source_sha256", sha));
  if (existing && std::filesystem::exists(existing->path)) {
    return commit_import(nullptr, *existing, name, options.keep_existing_alias);
  }

  SYN_ASSIGN_OR_RETURN(AtomicFile temp, AtomicFile::create_in(directory_ + "/tmp", "import"));
  // Marks the file as in progress: gc removes only temporary files nobody holds.
  SYN_ASSIGN_OR_RETURN(FileLock in_progress,
                       FileLock::try_lock(temp.temp_path(), FileLock::Mode::kExclusive));
  StoredModel model;
  if (const auto arch = file->metadata().get_string_or(gguf_key::kArchitecture, ""); arch.ok()) {
    model.architecture = std::string(*arch);
  }
  if (package != nullptr) {
    // A package is checked in full before it is trusted, then copied as it is.
    SYN_RETURN_IF_ERROR(verify_package(*package).status());
    const std::span<const uint8_t> bytes = mapping.bytes();
    for (uint64_t done = 0; done < bytes.size(); done += kChunkBytes) {
      const uint64_t n = std::min<uint64_t>(kChunkBytes, bytes.size() - done);
      SYN_RETURN_IF_ERROR(temp.write(bytes.subspan(done, n)));
      mapping.advise(AccessHint::kDontNeed, done, n);
      if (options.progress) options.progress("copying", done + n, bytes.size());
    }
    SYN_RETURN_IF_ERROR(temp.sync());
    model.digest = sha;
    model.source_sha256 = std::string(package->source().sha256);
    model.source_name = std::string(package->source().name);
    model.graph_hash = std::string(package->source().graph_hash);
  } else {
    PackageWriteOptions write_options;
    write_options.created_by = options.created_by;
    write_options.progress = [&options](uint64_t done, uint64_t total) {
      if (options.progress) options.progress("converting", done, total);
    };
    SYN_ASSIGN_OR_RETURN(const PackageWriteResult written,
                         write_package(*file, temp, write_options));
    if (written.source_sha256 != sha) {
      return Status(ErrorCode::kIoError, "the file changed while it was being imported",
                    ErrorWhere{.path = path});
    }
    SYN_RETURN_IF_ERROR(temp.sync());
    SYN_ASSIGN_OR_RETURN(const MappedFile sealed, MappedFile::open(temp.temp_path()));
    model.digest = to_hex(hash_mapping(sealed, "sealing", options));
    model.source_sha256 = sha;
    model.source_name = std::filesystem::path(path).filename().string();
    model.graph_hash = written.graph_hash;
  }
  model.bytes = temp.bytes_written();
  model.path = blob_path(model.digest);
  return commit_import(&temp, model, name, options.keep_existing_alias);
}

Result<ImportResult> ModelStore::commit_import(AtomicFile* temp, const StoredModel& model,
                                               std::string name, bool keep_existing_alias) {
  ImportResult result;
  SYN_ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::begin(db_));
  SYN_ASSIGN_OR_RETURN(SqliteStatement exists, db_.prepare("SELECT 1 FROM blobs WHERE digest = ?"));
  exists.bind(1, model.digest);
  SYN_ASSIGN_OR_RETURN(const bool stored, exists.step());
  const bool file_present = std::filesystem::exists(model.path);
  result.already_stored = stored && file_present;
  if (!file_present) {
    if (temp == nullptr) return Status(ErrorCode::kInternal, "blob file missing and no new copy");
    // Inside the write transaction: no gc or removal can run between the rename and the row.
    SYN_RETURN_IF_ERROR(temp->rename_to(model.path));
  }
  if (!stored) {
    SYN_ASSIGN_OR_RETURN(SqliteStatement insert,
                         db_.prepare("INSERT INTO blobs(digest, bytes, source_sha256, source_name, "
                                     "architecture, graph_hash, format_version, imported_at) "
                                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?)"));
    insert.bind(1, model.digest)
        .bind(2, static_cast<int64_t>(model.bytes))
        .bind(3, model.source_sha256)
        .bind(4, model.source_name)
        .bind(5, model.architecture)
        .bind(6, model.graph_hash)
        .bind(7, int64_t{kPackageVersion})
        .bind(8, store_now_seconds());
    SYN_RETURN_IF_ERROR(insert.run());
  }
  SYN_ASSIGN_OR_RETURN(SqliteStatement previous,
                       db_.prepare("SELECT digest FROM aliases WHERE name = ?"));
  previous.bind(1, name);
  SYN_ASSIGN_OR_RETURN(const bool had_alias, previous.step());
  if (had_alias && previous.column_text(0) != model.digest) {
    if (keep_existing_alias) {
      name += "-" + model.digest.substr(0, 12);
    } else {
      result.previous_digest = previous.column_text(0);
    }
  }
  result.name = name;
  SYN_ASSIGN_OR_RETURN(SqliteStatement alias,
                       db_.prepare("INSERT INTO aliases(name, digest, created_at) VALUES (?, ?, ?) "
                                   "ON CONFLICT(name) DO UPDATE SET digest = excluded.digest, "
                                   "created_at = excluded.created_at"));
  alias.bind(1, name).bind(2, model.digest).bind(3, store_now_seconds());
  SYN_RETURN_IF_ERROR(alias.run());
  SYN_ASSIGN_OR_RETURN(SqliteStatement unmark,
                       db_.prepare("UPDATE blobs SET unreferenced_since = NULL WHERE digest = ?"));
  unmark.bind(1, model.digest);
  SYN_RETURN_IF_ERROR(unmark.run());
  SYN_RETURN_IF_ERROR(txn.commit());
  SYN_ASSIGN_OR_RETURN(std::optional<StoredModel> stored_model, find_blob("digest", model.digest));
  if (!stored_model) return Status(ErrorCode::kInternal, "imported blob vanished");
  result.model = std::move(*stored_model);
  return result;
}

}  // namespace synapse
