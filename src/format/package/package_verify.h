// SPDX-License-Identifier: Apache-2.0
// Full integrity check of an opened package: every tensor's bytes against its XXH3-128 and every
// padding byte against zero, front to back (opening already checked the header, manifest and
// table). It streams through the mapping and releases pages behind itself, so it runs at the
// speed of the disk or page cache with constant memory.
#pragma once

#include <cstdint>
#include <functional>

#include "base/status.h"
#include "format/package/package_file.h"

namespace synapse {

struct PackageVerifyOptions {
  // Called as data is checked: bytes checked so far, bytes to check.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct PackageVerifyReport {
  size_t tensors_checked = 0;
  uint64_t bytes_checked = 0;  // padding included
};

// Fails at the first damage in file order: checksum_mismatch naming the tensor (where.tensor,
// where.byte_offset = the tensor's first byte), or bad_value for a non-zero padding byte.
Result<PackageVerifyReport> verify_package(const PackageFile& file,
                                           const PackageVerifyOptions& options = {});

}  // namespace synapse
