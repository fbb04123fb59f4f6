// SPDX-License-Identifier: Apache-2.0
#include "hub/hub_client.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "base/echo.h"
#include "base/hash.h"
#include "hub/http_client.h"

namespace synapse::hub {
namespace {

constexpr size_t kReadChunkBytes = 1u << 20;

std::string resolve_url_of(const HubConfig& config, std::string_view repo,
                           std::string_view revision, std::string_view path) {
  return config.endpoint + "/" + std::string(repo) + "/resolve/" + encode_segment(revision) + "/" +
         encode_path(path);
}

// ETags are quoted, possibly weak (W/"..."): the bare value.
std::string unquote_etag(std::string etag) {
  if (etag.starts_with("W/")) etag.erase(0, 2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return etag;
}

std::optional<uint64_t> parse_count(const std::string& text) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  uint64_t n = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  return n;
}

Status io_error(const std::string& what, const std::string& path) {
  return Status(ErrorCode::kIoError, what + ": " + std::strerror(errno), ErrorWhere{.path = path});
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// The hashes a download is checked with: the SHA-256 always (the store and the caller name the
// file by it), git's blob id only when that is what the hub gives.
class DownloadHashes {
 public:
  DownloadHashes(bool git_blob, uint64_t size) : git_blob_(git_blob), size_(size) { reset(); }
  void reset() {
    sha256_ = std::make_unique<Sha256Hasher>();
    sha1_.reset();
    if (!git_blob_) return;
    sha1_ = std::make_unique<Sha1Hasher>();
    const std::string header = "blob " + std::to_string(size_);
    sha1_->update(as_bytes(std::string_view(header.c_str(), header.size() + 1)));  // with '\0'
  }
  void update(std::span<const uint8_t> bytes) {
    sha256_->update(bytes);
    if (sha1_) sha1_->update(bytes);
  }
  std::string sha256_hex() { return to_hex(sha256_->finish()); }
  std::string git_blob_hex() { return sha1_ ? to_hex(sha1_->finish()) : std::string(); }

 private:
  bool git_blob_;
  uint64_t size_;
  std::unique_ptr<Sha256Hasher> sha256_;
  std::unique_ptr<Sha1Hasher> sha1_;
};

// The hashes of the first `bytes` of the file (what a resumed download already holds).
Status hash_prefix(int fd, uint64_t bytes, DownloadHashes& hasher, const std::string& path) {
  std::vector<uint8_t> buffer(kReadChunkBytes);
  uint64_t offset = 0;
  while (offset < bytes) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), bytes - offset));
    const ssize_t got = ::pread(fd, buffer.data(), want, static_cast<off_t>(offset));
    if (got <= 0) return io_error("cannot read the partial download", path);
    hasher.update({buffer.data(), static_cast<size_t>(got)});
    offset += static_cast<uint64_t>(got);
  }
  return ok_status();
}

}  // namespace

std::string git_blob_id_of(std::string_view bytes) {
  DownloadHashes hashes(/*git_blob=*/true, bytes.size());
  hashes.update(as_bytes(bytes));
  return hashes.git_blob_hex();
}

Status hub_status_error(long http_status, std::string_view what, bool have_token,
                        std::string_view body) {
  const std::string subject(what);
  const std::string detail =
      body.empty() ? std::string() : " (the hub said: " + clip_for_echo(body) + ")";
  if (http_status == 401 || http_status == 403) {
    if (!have_token) {
      return Status(ErrorCode::kHubUnauthorized,
                    subject + " needs authorization (HTTP " + std::to_string(http_status) +
                        "): it is private, gated or does not exist; set HF_TOKEN to a token " +
                        "that may read it" + detail);
    }
    return Status(ErrorCode::kHubUnauthorized,
                  "the hub refused the token for " + subject + " (HTTP " +
                      std::to_string(http_status) +
                      "): check HF_TOKEN, or accept the model's terms on its page" + detail);
  }
  if (http_status == 404) {
    return Status(ErrorCode::kHubNotFound, subject + " was not found on the hub" + detail);
  }
  return Status(ErrorCode::kHubUnavailable, "the hub answered HTTP " + std::to_string(http_status) +
                                                " for " + subject + detail);
}

Result<ModelInfo> fetch_model_info(const HubConfig& config, std::string_view repo,
                                   std::string_view revision,
                                   const std::function<bool()>& cancelled) {
  HttpRequest request;
  request.url = config.endpoint + "/api/models/" + std::string(repo) + "/revision/" +
                encode_segment(revision) + "?blobs=true";
  request.bearer_token = config.token;
  request.redirects = RedirectPolicy::kRelative;
  request.cancelled = cancelled;
  SYN_ASSIGN_OR_RETURN(const HttpResponse response, http_fetch(request));
  if (response.status != 200) {
    return hub_status_error(response.status,
                            std::string(repo) + " at revision '" + std::string(revision) + "'",
                            !config.token.empty(), response.body.substr(0, 200));
  }
  if (!response.transfer_error.empty()) {
    return Status(ErrorCode::kHubUnavailable, "the model info of " + std::string(repo) +
                                                  " was cut short: " + response.transfer_error);
  }
  return parse_model_info(response.body);
}

Result<FileMetadata> fetch_file_metadata(const HubConfig& config, std::string_view repo,
                                         std::string_view revision, std::string_view path,
                                         const std::function<bool()>& cancelled) {
  HttpRequest request;
  request.method = "HEAD";
  request.url = resolve_url_of(config, repo, revision, path);
  request.bearer_token = config.token;
  request.redirects = RedirectPolicy::kRelative;
  request.cancelled = cancelled;
  SYN_ASSIGN_OR_RETURN(const HttpResponse response, http_fetch(request));
  const std::string what = std::string(repo) + "/" + std::string(path);
  const bool redirect = response.status >= 300 && response.status < 400;
  if (response.status != 200 && !redirect) {
    return hub_status_error(response.status, what, !config.token.empty(), {});
  }
  FileMetadata meta;
  meta.commit = response.header("x-repo-commit");
  const std::string etag =
      unquote_etag(!response.header("x-linked-etag").empty() ? response.header("x-linked-etag")
                                                             : response.header("etag"));
  if (is_sha256_hex(etag)) meta.sha256 = etag;
  if (response.header("x-linked-etag").empty() && is_git_object_id(etag)) meta.git_blob_id = etag;
  const auto size =
      parse_count(!response.header("x-linked-size").empty() ? response.header("x-linked-size")
                                                            : response.header("content-length"));
  if (!size) {
    return Status(ErrorCode::kHubUnavailable, "the hub gave no size for " + what);
  }
  meta.size = *size;
  if (redirect) {
    SYN_ASSIGN_OR_RETURN(meta.location, resolve_url(response.url, response.header("location")));
  } else {
    meta.location = response.url;
  }
  return meta;
}

Result<std::string> download_verified(
    const DownloadSpec& spec, const std::function<void(uint64_t done, uint64_t total)>& progress,
    const std::function<bool()>& cancelled) {
  const std::string& path = spec.partial_path;
  const bool by_git_blob = spec.sha256.empty();
  if (by_git_blob && spec.git_blob_id.empty()) {
    return Status(ErrorCode::kUnsupported,
                  "the hub gives neither a SHA-256 nor a git blob id for " + spec.what +
                      ", so it cannot be verified");
  }
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (fd.get() < 0) return io_error("cannot open the partial download", path);
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    return Status(ErrorCode::kUnavailable,
                  "another process is downloading " + spec.what + " (it holds " + path + ")",
                  ErrorWhere{.path = path});
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return io_error("cannot stat the partial download", path);
  uint64_t have = static_cast<uint64_t>(st.st_size);
  const auto restart = [&]() -> Status {
    if (::ftruncate(fd.get(), 0) != 0) return io_error("cannot truncate", path);
    have = 0;
    return ok_status();
  };
  if (have > spec.size) SYN_RETURN_IF_ERROR(restart());
  DownloadHashes hasher(by_git_blob, spec.size);
  SYN_RETURN_IF_ERROR(hash_prefix(fd.get(), have, hasher, path));
  const auto remove_partial = [&path] { ::unlink(path.c_str()); };

  for (int attempt = 0; have < spec.size; ++attempt) {
    const uint64_t start = have;
    if (progress) progress(have, spec.size);
    HttpRequest request;
    request.url = spec.url;
    request.bearer_token = spec.token;
    request.cancelled = cancelled;
    if (start > 0) request.headers.emplace_back("Range", "bytes=" + std::to_string(start) + "-");
    Status write_error;
    bool range_ignored = false;
    request.on_body = [&](const HttpResponse& head, std::string_view bytes) {
      if (start > 0 && head.status == 200 && have == start && !range_ignored) {
        // The server sent the whole file: start over rather than append it to what we have.
        range_ignored = true;
        write_error = restart();
        if (!write_error.ok()) return false;
        hasher.reset();
      }
      if (have + bytes.size() > spec.size) {
        write_error =
            Status(ErrorCode::kSizeMismatch, spec.what + " is larger than the hub said (" +
                                                 std::to_string(spec.size) + " bytes)");
        return false;
      }
      const ssize_t written =
          ::pwrite(fd.get(), bytes.data(), bytes.size(), static_cast<off_t>(have));
      if (written != static_cast<ssize_t>(bytes.size())) {
        write_error = io_error("cannot write the download", path);
        return false;
      }
      hasher.update(as_bytes(bytes));
      have += bytes.size();
      if (progress) progress(have, spec.size);
      return true;
    };
    SYN_ASSIGN_OR_RETURN(const HttpResponse response, http_fetch(request));
    if (!write_error.ok()) {
      if (write_error.code() == ErrorCode::kSizeMismatch) remove_partial();
      return write_error;
    }
    if (response.status == 416 && start > 0 && attempt == 0) {
      // What we hold is no prefix of the file the server has now: fetch it whole.
      SYN_RETURN_IF_ERROR(restart());
      hasher.reset();
      continue;
    }
    if (response.status != 200 && response.status != 206) {
      return hub_status_error(response.status, spec.what, !spec.token.empty(), {});
    }
    if (response.status == 206 && start > 0 && !range_ignored) {
      const std::string range = response.header("content-range");
      if (!range.starts_with("bytes " + std::to_string(start) + "-")) {
        SYN_RETURN_IF_ERROR(restart());
        return Status(ErrorCode::kHubUnavailable, "the hub answered the wrong range ('" + range +
                                                      "') for " + spec.what + "; run again");
      }
    }
    if (have < spec.size) {
      const std::string why =
          response.transfer_error.empty() ? "the connection ended" : response.transfer_error;
      return Status(ErrorCode::kHubUnavailable,
                    "the download of " + spec.what + " stopped after " + std::to_string(have) +
                        " of " + std::to_string(spec.size) + " bytes (" + why +
                        "); run the pull again to resume",
                    ErrorWhere{.path = path});
    }
  }
  if (::fsync(fd.get()) != 0) return io_error("cannot sync the download", path);
  const std::string actual = hasher.sha256_hex();
  if (by_git_blob) {
    const std::string blob = hasher.git_blob_hex();
    if (blob != spec.git_blob_id) {
      remove_partial();
      return Status(ErrorCode::kChecksumMismatch,
                    "the download of " + spec.what + " has git blob id " + blob +
                        ", the hub says " + spec.git_blob_id +
                        "; it was deleted and nothing was stored",
                    ErrorWhere{.path = path});
    }
  } else if (actual != spec.sha256) {
    remove_partial();
    return Status(ErrorCode::kChecksumMismatch,
                  "the download of " + spec.what + " has SHA-256 " + actual + ", the hub says " +
                      spec.sha256 + "; it was deleted and nothing was stored",
                  ErrorWhere{.path = path});
  }
  if (progress) progress(have, spec.size);
  return actual;
}

}  // namespace synapse::hub
