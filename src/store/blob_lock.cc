// SPDX-License-Identifier: Apache-2.0
#include "store/blob_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

namespace synapse {

Result<FileLock> FileLock::try_lock(const std::string& path, Mode mode) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const ErrorCode code = errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIoError;
    return Status(code, std::string("cannot open: ") + std::strerror(errno),
                  ErrorWhere{.path = path});
  }
  FileLock lock;
  lock.fd_ = fd;
  lock.path_ = path;
  const int operation = (mode == Mode::kShared ? LOCK_SH : LOCK_EX) | LOCK_NB;
  while (::flock(fd, operation) != 0) {
    if (errno == EINTR) continue;
    if (errno == EWOULDBLOCK) {
      return Status(ErrorCode::kUnavailable,
                    mode == Mode::kShared ? "being deleted" : "in use by another process",
                    ErrorWhere{.path = path});
    }
    return Status(ErrorCode::kIoError, std::string("flock failed: ") + std::strerror(errno),
                  ErrorWhere{.path = path});
  }
  // The file may have been unlinked (or replaced) after open and before the lock.
  struct stat held {
  }, now{};
  if (::fstat(fd, &held) != 0 || ::stat(path.c_str(), &now) != 0 || held.st_dev != now.st_dev ||
      held.st_ino != now.st_ino) {
    return Status(ErrorCode::kNotFound, "removed while being locked", ErrorWhere{.path = path});
  }
  return lock;
}

FileLock::FileLock(FileLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

FileLock::~FileLock() { release(); }

void FileLock::release() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor drops the lock
  fd_ = -1;
}

std::vector<int> file_lock_holders(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  // Lines look like "1: FLOCK  ADVISORY  READ  12345 08:01:1234567 0 EOF". Only the inode is
  // compared: under overlay file systems the device /proc/locks shows is not the one stat gives.
  const std::string inode_suffix = ":" + std::to_string(st.st_ino);
  std::vector<int> pids;
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    std::istringstream fields(line);
    std::string number, kind, advisory, access, id;
    int pid = 0;
    if (!(fields >> number >> kind)) continue;
    if (kind == "->") fields >> kind;  // a waiter
    if (!(fields >> advisory >> access >> pid >> id)) continue;
    if (kind == "FLOCK" && id.ends_with(inode_suffix)) pids.push_back(pid);
  }
  return pids;
}

}  // namespace synapse
