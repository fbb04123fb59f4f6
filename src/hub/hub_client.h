// SPDX-License-Identifier: Apache-2.0
// The hub's HTTP protocol, as huggingface_hub speaks it:
//   GET  {endpoint}/api/models/{repo}/revision/{rev}?blobs=true  -> commit, files, sizes, LFS oids
//   HEAD {endpoint}/{repo}/resolve/{rev}/{file}  -> X-Repo-Commit, X-Linked-Etag (the LFS SHA-256,
//        quoted), X-Linked-Size, and a Location to the CDN; relative redirects (renamed repos) are
//        followed, the absolute one to the CDN is not: its response carries the metadata. A file
//        kept in git itself (not LFS) answers 200 with its git blob id as the plain ETag
//   GET  the resolved location with "Range: bytes=N-" to resume a download
// Hub answers map to stable codes: 401/403 hub_unauthorized (naming HF_TOKEN), 404 hub_not_found,
// 5xx and cut-short transfers hub_unavailable.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "hub/hub_config.h"
#include "hub/model_info.h"

namespace synapse::hub {

Result<ModelInfo> fetch_model_info(const HubConfig& config, std::string_view repo,
                                   std::string_view revision,
                                   const std::function<bool()>& cancelled);

struct FileMetadata {
  std::string commit;       // X-Repo-Commit
  std::string sha256;       // X-Linked-Etag unquoted, when it is a SHA-256 (an LFS file)
  std::string git_blob_id;  // the plain ETag unquoted, when it is a git object id (not LFS)
  uint64_t size = 0;        // X-Linked-Size, else Content-Length
  std::string location;     // where to GET the bytes (the CDN, or the resolve URL itself)
};

Result<FileMetadata> fetch_file_metadata(const HubConfig& config, std::string_view repo,
                                         std::string_view revision, std::string_view path,
                                         const std::function<bool()>& cancelled);

struct DownloadSpec {
  std::string url;
  std::string token;         // sent to the hub's host only
  std::string partial_path;  // appended to; what it already holds is resumed, not fetched again
  uint64_t size = 0;         // expected
  std::string sha256;        // expected, hex (an LFS file)
  std::string git_blob_id;   // expected when there is no SHA-256: git's object id (not LFS)
  std::string what;          // "ORG/REPO/FILE", for messages
};

// Downloads into spec.partial_path, resuming from its size with a Range request, and checks the
// whole file's SHA-256, or without one its git blob id (SHA-1 of "blob <size>\0" + the bytes);
// a spec with neither is refused. On success the partial file is complete and verified (the
// caller renames it) and its SHA-256 (hex) is returned. A transfer cut short keeps the partial
// (hub_unavailable: run again to resume); a hash or size mismatch deletes it (checksum_mismatch /
// size_mismatch). One process at a time per file (an flock on the partial).
Result<std::string> download_verified(
    const DownloadSpec& spec, const std::function<void(uint64_t done, uint64_t total)>& progress,
    const std::function<bool()>& cancelled);

// Git's object id of a blob holding `bytes`, as the hub gives it for a non-LFS file.
std::string git_blob_id_of(std::string_view bytes);

// The error for a hub response that is not a success, naming `what` and what to do.
Status hub_status_error(long http_status, std::string_view what, bool have_token,
                        std::string_view body);

}  // namespace synapse::hub
