// SPDX-License-Identifier: Apache-2.0
// The model store: prepared packages kept as content-addressed blobs (named by the SHA-256 of the
// package file), aliases from friendly names to blobs, leases that keep a blob while a process
// uses it, and two-phase garbage collection. Metadata lives in SQLite (WAL) beside the blobs:
//
//   <store>/store.db                      blobs, aliases, schema version
//   <store>/blobs/<sha256>.synapse        immutable package files
//   <store>/tmp/                          imports in progress (never read as blobs)
//
// Crash safety: a blob is written under tmp/, fsynced, and renamed into blobs/ inside the same
// SQLite write transaction that records it, so a crash leaves either nothing visible or a
// complete blob; leftovers (temporary files, a renamed blob whose row was never committed) are
// invisible to every lookup and removed by gc. Several processes may use one store at once:
// SQLite serializes the writers, and leases are flock(2) locks (blob_lock.h). A ModelStore
// object is one SQLite connection and belongs to one thread at a time; leases are independent
// of it and may outlive it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "sqlite/sqlite_db.h"
#include "store/blob_lock.h"

namespace synapse {

// $SYNAPSE_STORE, else <state directory>/store.
Result<std::string> default_store_directory();

// One stored package.
struct StoredModel {
  std::string digest;  // SHA-256 (hex) of the package file
  std::string path;    // where the blob is
  uint64_t bytes = 0;
  std::string source_sha256;  // of the file it was prepared from
  std::string source_name;
  std::string architecture;
  std::string graph_hash;
  int64_t imported_at = 0;                    // unix seconds
  std::optional<int64_t> unreferenced_since;  // gc's mark: no alias since then
  std::vector<std::string> aliases;
  std::vector<int> lease_holders;  // pids holding leases now (best effort, list/find only)
};

// Keeps a blob from deletion while it lives (a shared flock on the blob). Movable; independent of
// the ModelStore that made it.
class ModelLease {
 public:
  const std::string& digest() const { return digest_; }
  const std::string& path() const { return lock_.path(); }

 private:
  friend class ModelStore;
  ModelLease(std::string digest, FileLock lock)
      : digest_(std::move(digest)), lock_(std::move(lock)) {}
  std::string digest_;
  FileLock lock_;
};

struct ImportOptions {
  std::string name;  // alias; default: the file name without its extension
  std::string created_by = "synapse";
  // When the alias already names other content, import under "<name>-<digest prefix>" instead
  // of re-pointing it (automatic imports must not take a name the user gave to something else).
  bool keep_existing_alias = false;
  // Progress of the slow steps: stage ("hashing", "converting", "copying", "sealing"), bytes
  // done and total.
  std::function<void(std::string_view stage, uint64_t done, uint64_t total)> progress;
};

struct ImportResult {
  StoredModel model;
  std::string name;
  bool already_stored = false;  // the same content was in the store: nothing written
  std::string previous_digest;  // the alias pointed elsewhere before (now unreferenced?)
};

struct RemoveOptions {
  // How long to wait for leases on a blob that would be deleted; zero refuses at once.
  std::chrono::milliseconds wait{0};
};

struct RemoveResult {
  std::vector<std::string> aliases_removed;
  std::optional<std::string> blob_deleted;  // digest
  uint64_t bytes_freed = 0;
};

struct GcOptions {
  // A blob is deleted once it has been unreferenced (no alias) for this long; temporary files
  // and stray blob files once they are this old and unlocked.
  std::chrono::seconds grace{std::chrono::hours(1)};
  bool dry_run = false;
};

struct GcReport {
  std::vector<std::string> marked;               // newly unreferenced blobs
  std::vector<std::string> unmarked;             // referenced again since marked
  std::vector<std::string> deleted;              // blobs deleted
  std::vector<std::string> kept_leased;          // due for deletion but leased: kept
  std::vector<std::string> missing_removed;      // rows whose blob file had disappeared
  std::vector<std::string> stray_files_removed;  // temporary files, blobs without a row
  uint64_t bytes_freed = 0;
};

class ModelStore {
 public:
  // Opens (creating) the store in `directory` (empty: default_store_directory()).
  static Result<ModelStore> open(std::string directory = {});

  const std::string& directory() const { return directory_; }

  // Imports a GGUF (converted to a package) or a package (checked in full, copied). Content
  // already stored is not written twice: a GGUF is recognized by its SHA-256 before conversion.
  // The alias is created or re-pointed.
  Result<ImportResult> import(const std::string& path, const ImportOptions& options = {});

  // `ref` is an alias, a digest, or a unique digest prefix of at least 8 hex digits (optionally
  // "sha256:"-prefixed).
  Result<StoredModel> find(std::string_view ref);
  Result<std::vector<StoredModel>> list();
  // Resolves `ref` and takes a lease on its blob.
  Result<ModelLease> acquire_lease(std::string_view ref);

  // An alias: removes it, and deletes its blob when no alias is left. A digest: removes the blob
  // and every alias of it. A blob is never deleted while leased: unavailable (with the holders'
  // pids) after waiting up to options.wait, and then nothing is changed.
  Result<RemoveResult> remove(std::string_view ref, const RemoveOptions& options = {});
  // Two-phase collection: marks blobs without aliases, deletes those marked at least `grace` ago
  // that are not leased, and removes stray files.
  Result<GcReport> gc(const GcOptions& options = {});

  std::string blob_path(std::string_view digest) const;

 private:
  ModelStore(std::string directory, SqliteDb db)
      : directory_(std::move(directory)), db_(std::move(db)) {}
  Status migrate();
  Result<std::optional<StoredModel>> find_blob(std::string_view column, std::string_view value);
  Result<std::string> resolve_digest(std::string_view ref);
  Status fill_aliases(StoredModel& model);
  // Records `digest` (renaming `temp` into place unless the blob exists) and points `name` at it.
  Result<ImportResult> commit_import(class AtomicFile* temp, const StoredModel& model,
                                     std::string name, bool keep_existing_alias);
  Result<RemoveResult> try_remove(std::string_view ref);

  std::string directory_;
  SqliteDb db_;
};

// Alias names: 1 to 128 characters from [A-Za-z0-9._:-/], starting with a letter or digit, each
// '/' followed by a letter or digit, and not 64 hex digits (which would read as a digest).
Status check_alias_name(std::string_view name);

}  // namespace synapse
