// SPDX-License-Identifier: Apache-2.0
// Writes `.synapse` packages from any ModelFile (a GGUF today). The tensor data is streamed in
// the source's file order, chunk by chunk, straight from the source's mapping to the output, while
// the tensors' XXH3-128 and the source's SHA-256 are computed on the way; source pages are
// released behind the cursor, so memory use does not grow with the model. The manifest and table
// (whose checksums are known only at the end) are rewritten in place before the file is synced
// and renamed, so a package is never visible half written.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/atomic_file.h"
#include "base/status.h"
#include "format/model_file.h"
#include "format/package/package_format.h"

namespace synapse {

struct PackageWriteOptions {
  std::string created_by = "synapse";  // stored in the manifest; the CLI adds its version
  std::string source_name;             // default: the source path's file name
  uint64_t alignment = kPackageDefaultAlignment;
  // Called as data is written: bytes written so far, the package's size.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct PackageWriteResult {
  uint64_t package_bytes = 0;
  uint64_t tensor_data_bytes = 0;
  uint64_t source_bytes = 0;
  size_t tensor_count = 0;
  std::string source_sha256;  // hex
  std::string graph_hash;     // hex
};

// Writes a package of `source` (which must be backed by a mapped file) into `out`, which the
// caller then commits (AtomicFile::commit or rename_to).
Result<PackageWriteResult> write_package(const ModelFile& source, AtomicFile& out,
                                         const PackageWriteOptions& options = {});

// Opens `source_path` (GGUF), writes `out_path` atomically. A source that is already a package is
// refused (invalid_argument): there is nothing to prepare.
Result<PackageWriteResult> convert_to_package(const std::string& source_path,
                                              const std::string& out_path,
                                              const PackageWriteOptions& options = {});

}  // namespace synapse
