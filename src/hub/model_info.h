// SPDX-License-Identifier: Apache-2.0
// The hub's answer to GET /api/models/{repo}/revision/{rev}[?blobs=true]: the commit it resolved
// to and the repository's files, with sizes, LFS SHA-256s and git blob ids when blobs were asked
// for. The
// parser is fail-closed and bounded (it reads what a remote server sends) and fuzzed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace synapse::hub {

struct HubFile {
  std::string path;              // "rfilename": repository-relative, '/'-separated
  std::optional<uint64_t> size;  // bytes (blobs=true)
  std::string lfs_sha256;        // 64 lowercase hex digits, empty when not an LFS file
  // "blobId": git's object id of what the repository holds (40 lowercase hex digits, empty when
  // not given). For a non-LFS file that is the content's id (git_blob_id_of), the only check the
  // hub offers for it; for an LFS file it names the pointer, not the content.
  std::string git_blob_id;
};

struct ModelInfo {
  std::string commit;  // "sha": 40 hex digits
  std::vector<HubFile> files;
};

struct ModelInfoLimits {
  size_t max_bytes = 32u << 20;
  size_t max_files = 100'000;
  size_t max_path_bytes = 1024;
  int max_depth = 32;
};

Result<ModelInfo> parse_model_info(std::string_view json, const ModelInfoLimits& limits = {});

// A repository path safe to use in a URL and as a file name's source: relative, no empty, "." or
// ".." segment, no backslash or control character.
bool is_safe_repo_path(std::string_view path);
bool is_sha256_hex(std::string_view text);
bool is_git_object_id(std::string_view text);  // 40 lowercase hex digits (a SHA-1)

}  // namespace synapse::hub
