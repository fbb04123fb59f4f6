// SPDX-License-Identifier: Apache-2.0
// Leases on store blobs, across processes, with flock(2) on the blob file itself: a process that
// uses a blob holds a shared lock for as long as it runs; deleting a blob needs the exclusive
// lock, which cannot be had while any shared lock is held. The kernel drops a process's locks
// when it exits or crashes, so a lease can never outlive its holder and nothing needs reclaiming.
// Each lease is its own open file description, so leases in one process count independently.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace synapse {

// A held flock on one file; released on destruction.
class FileLock {
 public:
  enum class Mode { kShared, kExclusive };

  // Opens `path` read-only and tries the lock without waiting: unavailable when another holder
  // conflicts, not_found when the file is gone. A lock on a file that was replaced or unlinked
  // between open and lock is refused as not_found, so a lock always belongs to the file that is
  // at `path` now.
  static Result<FileLock> try_lock(const std::string& path, Mode mode);

  FileLock() = default;
  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

  bool held() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  void release();

 private:
  int fd_ = -1;
  std::string path_;
};

// Process ids holding flock locks on `path` (from /proc/locks; best effort, for messages).
std::vector<int> file_lock_holders(const std::string& path);

}  // namespace synapse
