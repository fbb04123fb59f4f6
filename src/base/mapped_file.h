// SPDX-License-Identifier: Apache-2.0
// A read-only memory-mapped file (RAII). Model weights are used straight from the mapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"

namespace synapse {

enum class AccessHint { kNormal, kSequential, kRandom, kWillNeed, kDontNeed };

class MappedFile {
 public:
  // Maps a regular file read-only. Directories, devices and FIFOs are refused (reading them could
  // block forever or never end). An empty file maps to an empty span.
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // madvise over [offset, offset + length) clipped to the file; advice is only a hint, so failures
  // are ignored.
  void advise(AccessHint hint, size_t offset = 0, size_t length = SIZE_MAX) const;
  // Drops from this process the mapped pages wholly inside `range` (which must lie in the
  // mapping; anything else is ignored), for bytes that were copied and are not read here again:
  // the page cache keeps them, and pages shared with bytes around the range stay.
  void release_pages_within(std::span<const uint8_t> range) const;

 private:
  void reset();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace synapse
