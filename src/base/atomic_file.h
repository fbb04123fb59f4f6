// SPDX-License-Identifier: Apache-2.0
// A file written under a temporary name and renamed into place only once it is complete and
// durable (the file fsynced, then its directory), so neither a reader nor a crash ever sees half
// a file. A file that is never renamed is removed when the object dies; one left behind by a
// crash keeps its temporary name (`<name>.tmp.XXXXXX`), which nothing reads as a real file.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace synapse {

class AtomicFile {
 public:
  // Creates `<path>.tmp.XXXXXX` (mode 0644) beside `path`, which rename_to()/commit() replace.
  static Result<AtomicFile> create(const std::string& path);
  // Creates `<directory>/<stem>.tmp.XXXXXX`, for callers that choose the final name later.
  static Result<AtomicFile> create_in(const std::string& directory, const std::string& stem);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  // Appends (buffered).
  Status write(std::span<const uint8_t> bytes);
  Status write_zeros(uint64_t count);
  // Overwrites bytes already written (e.g. a header whose checksums are known only at the end).
  Status write_at(uint64_t offset, std::span<const uint8_t> bytes);
  uint64_t bytes_written() const { return size_; }
  const std::string& temp_path() const { return temp_path_; }
  int fd() const { return fd_; }

  // Flushes and fsyncs the data; the file stays at temp_path().
  Status sync();
  // sync(), then renames to `path` (replacing what is there) and fsyncs the directory. After
  // this the object no longer owns the file.
  Status rename_to(const std::string& path);
  // rename_to() the path given to create().
  Status commit() { return rename_to(path_); }

 private:
  AtomicFile() = default;
  Status write_all(std::span<const uint8_t> bytes);
  Status flush();
  void discard();

  int fd_ = -1;
  std::string path_;
  std::string temp_path_;
  std::vector<uint8_t> buffer_;
  uint64_t size_ = 0;
  bool synced_ = false;
};

// fsync of a directory, so that a rename or unlink inside it survives a crash.
Status sync_directory(const std::string& directory);

}  // namespace synapse
