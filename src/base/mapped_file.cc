// SPDX-License-Identifier: Apache-2.0
#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/os_error.h"

namespace synapse {
namespace {

ErrorCode code_for_errno(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return ErrorCode::kNotFound;
    case EACCES:
    case EPERM:
      return ErrorCode::kPermissionDenied;
    case ENOMEM:
      return ErrorCode::kResourceExhausted;
    default:
      return ErrorCode::kIoError;
  }
}

Status errno_status(const char* what, const std::string& path) {
  const int err = errno;
  return Status(code_for_errno(err), std::string(what) + ": " + errno_text(err),
                ErrorWhere{.path = path});
}

}  // namespace

Result<MappedFile> MappedFile::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return errno_status("cannot open", path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    Status status = errno_status("cannot stat", path);
    ::close(fd);
    return status;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status(ErrorCode::kInvalidArgument, "not a regular file", ErrorWhere{.path = path});
  }
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ > 0) {
    void* data = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      Status status = errno_status("cannot map", path);
      ::close(fd);
      return status;
    }
    file.data_ = static_cast<const uint8_t*>(data);
  }
  ::close(fd);  // the mapping keeps the file alive
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    path_ = std::move(other.path_);
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

void MappedFile::advise(AccessHint hint, size_t offset, size_t length) const {
  if (data_ == nullptr || offset >= size_) return;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t begin = offset & ~(page - 1);  // madvise needs a page-aligned start
  const size_t end = offset + std::min(length, size_ - offset);
  int advice = MADV_NORMAL;
  switch (hint) {
    case AccessHint::kNormal:
      advice = MADV_NORMAL;
      break;
    case AccessHint::kSequential:
      advice = MADV_SEQUENTIAL;
      break;
    case AccessHint::kRandom:
      advice = MADV_RANDOM;
      break;
    case AccessHint::kWillNeed:
      advice = MADV_WILLNEED;
      break;
    case AccessHint::kDontNeed:
      advice = MADV_DONTNEED;
      break;
  }
  ::madvise(const_cast<uint8_t*>(data_) + begin, end - begin, advice);
}

void MappedFile::release_pages_within(std::span<const uint8_t> range) const {
  if (data_ == nullptr || range.empty() || range.data() < data_ ||
      range.data() + range.size() > data_ + size_) {
    return;
  }
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const auto offset = static_cast<size_t>(range.data() - data_);
  const size_t begin = (offset + page - 1) / page * page;  // advise() rounds a start down
  const size_t end = (offset + range.size()) / page * page;
  if (end > begin) advise(AccessHint::kDontNeed, begin, end - begin);
}

}  // namespace synapse
