// SPDX-License-Identifier: Apache-2.0
#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

namespace synapse {
namespace {

constexpr size_t kBufferBytes = 1 << 20;

Status errno_status(const std::string& what, const std::string& path) {
  return Status(ErrorCode::kIoError, what + ": " + std::strerror(errno), ErrorWhere{.path = path});
}

std::string parent_directory(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

}  // namespace

Result<AtomicFile> AtomicFile::create(const std::string& path) {
  Result<AtomicFile> file =
      create_in(parent_directory(path), std::filesystem::path(path).filename().string());
  if (file.ok()) file->path_ = path;
  return file;
}

Result<AtomicFile> AtomicFile::create_in(const std::string& directory, const std::string& stem) {
  AtomicFile file;
  file.temp_path_ = directory + "/" + stem + ".tmp.XXXXXX";
  file.fd_ = ::mkostemp(file.temp_path_.data(), O_CLOEXEC);
  if (file.fd_ < 0) return errno_status("cannot create file", file.temp_path_);
  ::fchmod(file.fd_, 0644);  // mkstemp creates 0600; model files are not secrets
  file.buffer_.reserve(kBufferBytes);
  return file;
}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      temp_path_(std::move(other.temp_path_)),
      buffer_(std::move(other.buffer_)),
      size_(other.size_),
      synced_(other.synced_) {}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    discard();
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    temp_path_ = std::move(other.temp_path_);
    buffer_ = std::move(other.buffer_);
    size_ = other.size_;
    synced_ = other.synced_;
  }
  return *this;
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(temp_path_.c_str());
  fd_ = -1;
}

Status AtomicFile::write_all(std::span<const uint8_t> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return errno_status("write failed", temp_path_);
    done += static_cast<size_t>(n);
  }
  return ok_status();
}

Status AtomicFile::flush() {
  SYN_RETURN_IF_ERROR(write_all(buffer_));
  buffer_.clear();
  return ok_status();
}

Status AtomicFile::write(std::span<const uint8_t> bytes) {
  if (fd_ < 0) return Status(ErrorCode::kInternal, "write to a closed AtomicFile");
  synced_ = false;
  size_ += bytes.size();
  if (buffer_.size() + bytes.size() > kBufferBytes) SYN_RETURN_IF_ERROR(flush());
  if (bytes.size() >= kBufferBytes) return write_all(bytes);  // large writes skip the buffer
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
  return ok_status();
}

Status AtomicFile::write_zeros(uint64_t count) {
  static const std::vector<uint8_t> kZeros(size_t{64} * 1024, 0);
  while (count > 0) {
    const uint64_t n = std::min<uint64_t>(count, kZeros.size());
    SYN_RETURN_IF_ERROR(write({kZeros.data(), n}));
    count -= n;
  }
  return ok_status();
}

Status AtomicFile::write_at(uint64_t offset, std::span<const uint8_t> bytes) {
  if (fd_ < 0) return Status(ErrorCode::kInternal, "write to a closed AtomicFile");
  if (offset + bytes.size() > size_) {
    return Status(ErrorCode::kInternal, "write_at past the bytes written",
                  ErrorWhere{.path = temp_path_});
  }
  SYN_RETURN_IF_ERROR(flush());
  synced_ = false;
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n =
        ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return errno_status("write failed", temp_path_);
    done += static_cast<size_t>(n);
  }
  return ok_status();
}

Status AtomicFile::sync() {
  if (fd_ < 0) return Status(ErrorCode::kInternal, "sync of a closed AtomicFile");
  SYN_RETURN_IF_ERROR(flush());
  if (::fsync(fd_) != 0) return errno_status("fsync failed", temp_path_);
  synced_ = true;
  return ok_status();
}

Status AtomicFile::rename_to(const std::string& path) {
  if (!synced_) SYN_RETURN_IF_ERROR(sync());
  if (::rename(temp_path_.c_str(), path.c_str()) != 0) return errno_status("rename failed", path);
  ::close(fd_);
  fd_ = -1;
  return sync_directory(parent_directory(path));
}

Status sync_directory(const std::string& directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_status("cannot open directory", directory);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return errno_status("fsync of directory failed", directory);
  return ok_status();
}

}  // namespace synapse
