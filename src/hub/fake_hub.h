// SPDX-License-Identifier: Apache-2.0
// Test-only: a local HTTP server speaking the hub's protocol for one repository, so pull tests
// never touch the network. It serves the model info (siblings, sha, blobs), resolve URLs that
// redirect relatively (main -> the commit) and then absolutely to a CDN-like /cdn/<sha256> with
// X-Repo-Commit, X-Linked-Etag and X-Linked-Size, and CDN bodies with Range support. A file kept
// in git (not LFS) is served by resolve itself, with its git blob id as `blobId` and ETag, as the
// hub does. Faults on demand: a body cut short, bytes that do not match their advertised hash, a
// required token.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "http/router.h"
#include "http/server.h"

namespace synapse::hub {

struct FakeHubFile {
  std::string path;   // repository path (one segment)
  std::string bytes;  // content
  bool lfs = true;    // LFS files redirect to the CDN and carry a SHA-256; others a git blob id
};

struct FakeHubOptions {
  std::string repo = "org/model-GGUF";
  std::string commit = "0123456789abcdef0123456789abcdef01234567";
  std::vector<FakeHubFile> files;
  std::string required_token;  // non-empty: 401 unless "Authorization: Bearer <token>"
  // A former name of the repository: its URLs redirect (relatively) to the current one.
  std::string old_repo;
};

class FakeHub {
 public:
  static Result<std::unique_ptr<FakeHub>> start(FakeHubOptions options);
  ~FakeHub();

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

  // The next CDN body ends (cleanly, as if the connection dropped) after this many bytes.
  void cut_next_body_after(uint64_t bytes) { cut_after_ = static_cast<int64_t>(bytes); }
  // Bodies (CDN and non-LFS) have one byte flipped; the advertised hashes stay the original's.
  void corrupt_bodies(bool on) { corrupt_ = on; }

  // The Range header of each CDN GET, in order ("" when none was sent).
  std::vector<std::string> cdn_ranges() const;
  // "METHOD target" of every request, in order.
  std::vector<std::string> requests() const;
  static std::string sha256_hex(const std::string& bytes);
  // Git's object id of a blob of `bytes` (SHA-1 of "blob <size>\0" + bytes).
  static std::string git_blob_id(const std::string& bytes);

 private:
  explicit FakeHub(FakeHubOptions options) : options_(std::move(options)) {}
  void handle(http::Request& req, http::Response& res);
  void model_info(http::Request& req, http::Response& res);
  void resolve(http::Request& req, http::Response& res);
  void cdn(http::Request& req, http::Response& res);
  bool authorized(const http::Request& req, http::Response& res) const;
  // A request for the old name: answered with a relative redirect to the new one.
  bool redirected(const http::Request& req, http::Response& res) const;

  FakeHubOptions options_;
  http::Router router_;
  std::unique_ptr<http::Server> server_;
  std::atomic<int64_t> cut_after_{-1};
  std::atomic<bool> corrupt_{false};
  mutable std::mutex mutex_;
  std::vector<std::string> ranges_;
  std::vector<std::string> requests_;
};

}  // namespace synapse::hub
