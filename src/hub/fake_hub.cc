// SPDX-License-Identifier: Apache-2.0
#include "hub/fake_hub.h"

#include <nlohmann/json.hpp>

#include "base/hash.h"

namespace synapse::hub {

std::string FakeHub::sha256_hex(const std::string& bytes) {
  return to_hex(sha256(as_bytes(bytes)));
}

std::string FakeHub::git_blob_id(const std::string& bytes) {
  Sha1Hasher hasher;
  const std::string header = "blob " + std::to_string(bytes.size());
  hasher.update(as_bytes(std::string_view(header.c_str(), header.size() + 1)));  // with its '\0'
  hasher.update(as_bytes(bytes));
  return to_hex(hasher.finish());
}

Result<std::unique_ptr<FakeHub>> FakeHub::start(FakeHubOptions options) {
  std::unique_ptr<FakeHub> hub(new FakeHub(std::move(options)));
  FakeHub* self = hub.get();
  self->router_.add("GET", "/api/models/{org}/{name}/revision/{rev}",
                    [self](http::Request& q, http::Response& r) { self->model_info(q, r); });
  self->router_.add("GET", "/{org}/{name}/resolve/{rev}/{file}",
                    [self](http::Request& q, http::Response& r) { self->resolve(q, r); });
  self->router_.add("GET", "/cdn/{sha}",
                    [self](http::Request& q, http::Response& r) { self->cdn(q, r); });
  http::ServerOptions server_options;
  server_options.port = 0;
  server_options.threads = 4;
  hub->server_ = std::make_unique<http::Server>(
      server_options, http::ServerHooks{.handler = [self](http::Request& q, http::Response& r) {
        self->handle(q, r);
      }});
  SYN_RETURN_IF_ERROR(hub->server_->start());
  return hub;
}

FakeHub::~FakeHub() {
  if (server_) server_->stop();
}

std::vector<std::string> FakeHub::cdn_ranges() const {
  std::lock_guard lock(mutex_);
  return ranges_;
}

std::vector<std::string> FakeHub::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

void FakeHub::handle(http::Request& req, http::Response& res) {
  {
    std::lock_guard lock(mutex_);
    requests_.push_back(req.method + " " + req.target);
  }
  const http::Router::Match match = router_.match(req);
  if (match.kind != http::Router::Match::Kind::kFound) {
    res.status = 404;
    res.set_content("{\"error\":\"Not Found\"}", "application/json");
    return;
  }
  match.route->handler(req, res);
}

bool FakeHub::authorized(const http::Request& req, http::Response& res) const {
  if (options_.required_token.empty() ||
      req.header("Authorization") == "Bearer " + options_.required_token) {
    return true;
  }
  // As the real hub answers for a gated or private repository.
  res.status = 401;
  res.set_header("X-Error-Code", "GatedRepo");
  res.set_content("{\"error\":\"Access to model " + options_.repo + " is restricted.\"}",
                  "application/json");
  return false;
}

bool FakeHub::redirected(const http::Request& req, http::Response& res) const {
  const std::string repo = req.path_param("org") + "/" + req.path_param("name");
  if (options_.old_repo.empty() || repo != options_.old_repo) return false;
  std::string target = req.target;
  target.replace(target.find(repo), repo.size(), options_.repo);
  res.status = 307;
  res.set_header("Location", target);
  return true;
}

void FakeHub::model_info(http::Request& req, http::Response& res) {
  if (!authorized(req, res) || redirected(req, res)) return;
  const std::string repo = req.path_param("org") + "/" + req.path_param("name");
  const std::string rev = req.path_param("rev");
  if (repo != options_.repo || (rev != "main" && rev != options_.commit)) {
    res.status = 404;
    res.set_content("{\"error\":\"Repository not found\"}", "application/json");
    return;
  }
  const bool blobs = req.param("blobs") == "true";
  nlohmann::json siblings = nlohmann::json::array();
  for (const FakeHubFile& f : options_.files) {
    nlohmann::json s = {{"rfilename", f.path}};
    if (blobs) {
      s["size"] = f.bytes.size();
      // For an LFS file the hub's blobId names the pointer git keeps, not the content.
      const std::string pointer =
          "version https://git-lfs.github.com/spec/v1\noid sha256:" + sha256_hex(f.bytes) +
          "\nsize " + std::to_string(f.bytes.size()) + "\n";
      s["blobId"] = git_blob_id(f.lfs ? pointer : f.bytes);
      if (f.lfs) {
        s["lfs"] = {
            {"sha256", sha256_hex(f.bytes)}, {"size", f.bytes.size()}, {"pointerSize", 134}};
      }
    }
    siblings.push_back(s);
  }
  res.set_content(
      nlohmann::json(
          {{"_id", "0"}, {"id", options_.repo}, {"sha", options_.commit}, {"siblings", siblings}})
          .dump(),
      "application/json");
}

void FakeHub::resolve(http::Request& req, http::Response& res) {
  if (!authorized(req, res) || redirected(req, res)) return;
  const std::string repo = req.path_param("org") + "/" + req.path_param("name");
  const std::string rev = req.path_param("rev");
  const std::string file = req.path_param("file");
  const FakeHubFile* found = nullptr;
  for (const FakeHubFile& f : options_.files) {
    if (f.path == file) found = &f;
  }
  if (repo != options_.repo || found == nullptr || (rev != "main" && rev != options_.commit)) {
    res.status = 404;
    res.set_header("X-Error-Code", "EntryNotFound");
    res.set_content("{\"error\":\"Entry not found\"}", "application/json");
    return;
  }
  res.set_header("X-Repo-Commit", options_.commit);
  if (rev == "main") {
    // A relative redirect, as the hub gives for a renamed repository: followed by HEAD too.
    res.status = 307;
    res.set_header("Location", "/" + repo + "/resolve/" + options_.commit + "/" + file);
    return;
  }
  if (!found->lfs) {
    res.set_header("ETag", "\"" + git_blob_id(found->bytes) + "\"");
    std::string body = found->bytes;
    if (corrupt_ && !body.empty()) body[body.size() / 2] ^= 1;
    res.set_content(std::move(body), "application/octet-stream");
    return;
  }
  const std::string sha = sha256_hex(found->bytes);
  res.status = 302;
  res.set_header("Location", endpoint() + "/cdn/" + sha + "?file=" + file);
  res.set_header("X-Linked-Etag", "\"" + sha + "\"");
  res.set_header("X-Linked-Size", std::to_string(found->bytes.size()));
  res.set_header("ETag", "\"" + sha + "\"");
}

void FakeHub::cdn(http::Request& req, http::Response& res) {
  const std::string sha = req.path_param("sha");
  const FakeHubFile* found = nullptr;
  for (const FakeHubFile& f : options_.files) {
    if (f.lfs && sha256_hex(f.bytes) == sha) found = &f;
  }
  const std::string range = req.header("Range");
  {
    std::lock_guard lock(mutex_);
    ranges_.push_back(range);
  }
  if (found == nullptr) {
    res.status = 404;
    return;
  }
  std::string body = found->bytes;
  if (corrupt_ && !body.empty())
    body[body.size() / 2] = static_cast<char>(body[body.size() / 2] ^ 1);
  size_t start = 0;
  if (!range.empty()) {
    // Only the form the client sends: "bytes=N-".
    if (!range.starts_with("bytes=") || !range.ends_with("-")) {
      res.status = 400;
      return;
    }
    start = std::stoull(range.substr(6, range.size() - 7));
    if (start >= body.size()) {
      res.status = 416;
      res.set_header("Content-Range", "bytes */" + std::to_string(body.size()));
      return;
    }
    res.status = 206;
    res.set_header("Content-Range", "bytes " + std::to_string(start) + "-" +
                                        std::to_string(body.size() - 1) + "/" +
                                        std::to_string(body.size()));
  }
  res.set_header("Accept-Ranges", "bytes");
  std::string slice = body.substr(start);
  const int64_t cut = cut_after_.exchange(-1);
  if (cut >= 0 && static_cast<uint64_t>(cut) < slice.size()) {
    // A stream that ends early: the client sees fewer bytes than the file has.
    auto rest = std::make_shared<std::string>(slice.substr(0, static_cast<size_t>(cut)));
    res.set_stream("application/octet-stream", [rest](http::StreamSink& sink) {
      if (!rest->empty()) sink.write(*rest);
      return false;
    });
    return;
  }
  res.set_content(std::move(slice), "application/octet-stream");
}

}  // namespace synapse::hub
