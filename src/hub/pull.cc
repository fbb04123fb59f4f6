// SPDX-License-Identifier: Apache-2.0
#include "hub/pull.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "base/hash.h"
#include "base/paths.h"
#include "hub/gguf_join.h"
#include "hub/hub_client.h"
#include "hub/hub_ref.h"
#include "hub/local_models.h"

namespace synapse::hub {
namespace {

namespace fs = std::filesystem;

// One file of the choice, resolved to bytes on this machine.
struct Fetched {
  std::string repo_path;
  std::string path;    // where its verified bytes are
  bool owned = false;  // ours to delete after the import (a download, not the HF cache)
  std::string sha256;
  uint64_t size = 0;
};

class Puller {
 public:
  Puller(const PullRequest& request, const PullProgressFn& on_progress,
         const std::function<bool()>& cancelled)
      : request_(request),
        config_(request.config ? *request.config : HubConfig::from_environment()),
        on_progress_(on_progress),
        cancelled_(cancelled ? cancelled : [] { return false; }) {}

  Result<PullResult> run();

 private:
  void report(PullStage stage, std::string status, std::string digest = {}, uint64_t total = 0,
              uint64_t completed = 0, std::string file = {}) const {
    if (on_progress_) {
      on_progress_(
          {std::move(status), std::move(digest), total, completed, stage, std::move(file)});
    }
  }
  Status check_cancelled() const {
    return cancelled_() ? Status(ErrorCode::kCancelled, "the pull was cancelled") : ok_status();
  }
  // Hashes a local copy against the SHA-256 the hub (or the cache's blob name) gives.
  Result<bool> verify_local(const std::string& path, const std::string& sha256,
                            const std::string& repo_path) const;
  // Downloads into <downloads>/<key>.partial, verified by `spec`, then renames it <key>.gguf.
  Status download(Fetched& out, const std::string& key, const std::string& digest,
                  DownloadSpec spec);
  Result<Fetched> fetch_online(const std::string& repo_path, const HubFile* listed,
                               const std::string& commit);
  Result<PullResult> run_offline(const HubRef& ref);
  Result<PullResult> finish(PullResult result, std::vector<Fetched> fetched);

  const PullRequest& request_;
  const HubConfig config_;
  const PullProgressFn& on_progress_;
  const std::function<bool()> cancelled_;
  std::optional<ModelStore> store_;
  std::string download_dir_;
  std::string repo_;
  bool reused_cache_ = false;
  std::string stored_sha256_;  // source SHA-256 of what the name already holds
  bool already_stored_ = false;
};

Result<bool> Puller::verify_local(const std::string& path, const std::string& sha256,
                                  const std::string& repo_path) const {
  report(PullStage::kVerify, "verifying sha256 digest", "sha256:" + sha256, 0, 0, repo_path);
  SYN_ASSIGN_OR_RETURN(const Sha256Digest digest, sha256_file(path));
  return to_hex(digest) == sha256;
}

Status Puller::download(Fetched& out, const std::string& key, const std::string& digest,
                        DownloadSpec spec) {
  const std::string partial = download_dir_ + "/" + key + ".partial";
  const std::string status = "pulling " + key.substr(0, 12);
  report(PullStage::kDownload, status, digest, out.size, 0, out.repo_path);
  spec.partial_path = partial;
  SYN_ASSIGN_OR_RETURN(out.sha256, download_verified(
                                       spec,
                                       [&](uint64_t done, uint64_t total) {
                                         report(PullStage::kDownload, status, digest, total, done,
                                                out.repo_path);
                                       },
                                       cancelled_));
  out.path = download_dir_ + "/" + key + ".gguf";
  std::error_code error;
  fs::rename(partial, out.path, error);
  if (error) {
    return Status(ErrorCode::kIoError, "cannot rename the download: " + error.message(),
                  ErrorWhere{.path = partial});
  }
  out.owned = true;
  return ok_status();
}

Result<Fetched> Puller::fetch_online(const std::string& repo_path, const HubFile* listed,
                                     const std::string& commit) {
  const std::string what = request_.model + " file " + repo_path;
  SYN_ASSIGN_OR_RETURN(const FileMetadata meta,
                       fetch_file_metadata(config_, repo_, commit, repo_path, cancelled_));
  Fetched out{repo_path, {}, false, meta.sha256, meta.size};
  if (listed && !listed->lfs_sha256.empty()) {
    if (!out.sha256.empty() && out.sha256 != listed->lfs_sha256) {
      return Status(ErrorCode::kHubUnavailable, "the hub gives two SHA-256s for " + what + " (" +
                                                    out.sha256 + ", " + listed->lfs_sha256 + ")");
    }
    out.sha256 = listed->lfs_sha256;
  }
  DownloadSpec spec{meta.location, config_.token, {}, out.size, out.sha256, {}, what};
  if (out.sha256.empty()) {
    // Not an LFS file: git's blob id is the only check the hub offers. The model info's blobId
    // names the content only for such a file (for an LFS file it names the pointer).
    spec.git_blob_id = meta.git_blob_id;
    if (listed && !listed->git_blob_id.empty()) {
      if (!spec.git_blob_id.empty() && spec.git_blob_id != listed->git_blob_id) {
        return Status(ErrorCode::kHubUnavailable, "the hub gives two git blob ids for " + what +
                                                      " (" + spec.git_blob_id + ", " +
                                                      listed->git_blob_id + ")");
      }
      spec.git_blob_id = listed->git_blob_id;
    }
    if (spec.git_blob_id.empty()) {
      return Status(ErrorCode::kUnsupported,
                    "the hub gives neither a SHA-256 nor a git blob id for " + what +
                        ", so it cannot be verified; nothing was stored");
    }
    // Nothing on this machine is named by a git blob id: the file is fetched and hashed both
    // ways, and the store then knows it by its SHA-256.
    SYN_RETURN_IF_ERROR(download(out, "git-" + spec.git_blob_id, {}, std::move(spec)));
    if (out.sha256 == stored_sha256_) already_stored_ = true;
    return out;
  }
  const std::string digest = "sha256:" + out.sha256;
  if (out.sha256 == stored_sha256_) {
    already_stored_ = true;  // the store has this very file under the name: nothing to fetch
    return out;
  }
  // A complete copy in the Hugging Face cache (blobs are named by their SHA-256) saves the
  // download, once it hashes right.
  if (const auto cached = hf_cache_blob(config_, repo_, out.sha256, out.size)) {
    SYN_ASSIGN_OR_RETURN(const bool good, verify_local(*cached, out.sha256, repo_path));
    if (good) {
      out.path = *cached;
      reused_cache_ = true;
      return out;
    }
  }
  // A download verified by an earlier run whose import then failed: verified again, reused.
  const std::string complete = download_dir_ + "/" + out.sha256 + ".gguf";
  std::error_code exists_error;
  if (fs::is_regular_file(complete, exists_error) &&
      fs::file_size(complete, exists_error) == out.size && !exists_error) {
    SYN_ASSIGN_OR_RETURN(const bool good, verify_local(complete, out.sha256, repo_path));
    if (good) {
      out.path = complete;
      out.owned = true;
      return out;
    }
  }
  SYN_RETURN_IF_ERROR(download(out, out.sha256, digest, std::move(spec)));
  return out;
}

Result<PullResult> Puller::finish(PullResult result, std::vector<Fetched> fetched) {
  SYN_RETURN_IF_ERROR(check_cancelled());
  std::string gguf = fetched[0].path;
  bool gguf_owned = fetched[0].owned;
  for (const Fetched& f : fetched) result.bytes += f.size;
  result.sha256 = fetched[0].sha256;
  if (fetched.size() > 1) {
    report(PullStage::kJoin, "joining " + std::to_string(fetched.size()) + " parts");
    std::vector<std::string> parts;
    for (const Fetched& f : fetched) parts.push_back(f.path);
    gguf = download_dir_ + "/" + fetched[0].sha256 + ".joined.gguf";
    SYN_RETURN_IF_ERROR(join_gguf_splits(parts, gguf, [&](uint64_t done, uint64_t total) {
      report(PullStage::kJoin, "joining " + std::to_string(parts.size()) + " parts", {}, total,
             done);
    }));
    gguf_owned = true;
    SYN_ASSIGN_OR_RETURN(const Sha256Digest joined, sha256_file(gguf));
    result.sha256 = to_hex(joined);
  }
  ImportOptions options;
  options.name = result.name;
  options.created_by = request_.created_by;
  options.progress = [&](std::string_view stage, uint64_t done, uint64_t total) {
    report(PullStage::kImport, "importing (" + std::string(stage) + ")", "sha256:" + result.sha256,
           total, done);
  };
  Result<ImportResult> imported = store_->import(gguf, options);
  // The store holds its own prepared copy: the downloads have served their purpose (a failed
  // import keeps them, so a rerun need not fetch again).
  if (imported.ok()) {
    std::error_code ignored;
    for (const Fetched& f : fetched) {
      if (f.owned) fs::remove(f.path, ignored);
    }
    if (gguf_owned) fs::remove(gguf, ignored);
  }
  if (!imported.ok()) return imported.status();
  result.model = imported->model;
  report(PullStage::kSuccess, "success");
  return result;
}

Result<PullResult> Puller::run_offline(const HubRef& ref) {
  PullResult result;
  result.repo = ref.repo;
  Result<CachedSnapshot> snapshot = hf_cache_snapshot(config_, ref.repo, request_.revision);
  if (snapshot.ok()) {
    std::vector<std::string> paths;
    for (const CachedFile& f : snapshot->files) paths.push_back(f.repo_path);
    SYN_ASSIGN_OR_RETURN(const GgufChoice choice,
                         choose_gguf(paths, ref.tag, request_.file, ref.repo));
    result.commit = snapshot->commit;
    result.files = choice.files;
    result.name = request_.name.empty() ? store_name({ref.repo, choice.tag}) : request_.name;
    SYN_RETURN_IF_ERROR(check_alias_name(result.name));
    std::vector<Fetched> fetched;
    for (const std::string& file : choice.files) {
      const auto found = std::find_if(snapshot->files.begin(), snapshot->files.end(),
                                      [&](const CachedFile& f) { return f.repo_path == file; });
      if (found == snapshot->files.end() || found->sha256.empty()) {
        return Status(ErrorCode::kHubOffline,
                      "offline (HF_HUB_OFFLINE), and the Hugging Face cache holds no verifiable "
                      "copy of " +
                          ref.repo + "/" + file);
      }
      SYN_ASSIGN_OR_RETURN(const bool good, verify_local(found->path, found->sha256, file));
      if (!good) {
        return Status(ErrorCode::kChecksumMismatch,
                      "the Hugging Face cache's copy of " + ref.repo + "/" + file +
                          " does not hash to its name; nothing was stored",
                      ErrorWhere{.path = found->path});
      }
      fetched.push_back({file, found->path, false, found->sha256, found->bytes});
    }
    result.source = "huggingface-cache";
    return finish(std::move(result), std::move(fetched));
  }
  // Pulled before: the store has it under the name this pull would give.
  std::vector<std::string> names;
  if (!request_.name.empty()) names.push_back(request_.name);
  if (!ref.tag.empty()) {
    names.push_back(store_name(ref));
  } else {
    for (const std::string_view q : kQuantizationPreference) {
      names.push_back(store_name({ref.repo, std::string(q)}));
    }
  }
  for (const std::string& name : names) {
    Result<StoredModel> stored = store_->find(name);
    if (!stored.ok()) continue;
    result.name = name;
    result.sha256 = stored->source_sha256;
    result.source = "store";
    result.model = *stored;
    report(PullStage::kSuccess, "success");
    return result;
  }
  return Status(ErrorCode::kHubOffline,
                "offline (HF_HUB_OFFLINE=1) and " + ref.repo +
                    " is neither in the Hugging Face cache (" + config_.hub_cache +
                    ") nor in the store; unset HF_HUB_OFFLINE to download it");
}

Result<PullResult> Puller::run() {
  SYN_ASSIGN_OR_RETURN(const HubRef ref, parse_hub_ref(request_.model));
  repo_ = ref.repo;
  SYN_ASSIGN_OR_RETURN(ModelStore store, ModelStore::open(request_.store_directory));
  store_.emplace(std::move(store));
  download_dir_ = store_->directory() + "/downloads";
  SYN_RETURN_IF_ERROR(create_directories(download_dir_));
  if (config_.offline) return run_offline(ref);

  report(PullStage::kManifest, "pulling manifest");
  SYN_ASSIGN_OR_RETURN(const ModelInfo info,
                       fetch_model_info(config_, ref.repo, request_.revision, cancelled_));
  std::vector<std::string> paths;
  for (const HubFile& f : info.files) paths.push_back(f.path);
  SYN_ASSIGN_OR_RETURN(const GgufChoice choice,
                       choose_gguf(paths, ref.tag, request_.file, ref.repo));
  PullResult result;
  result.repo = ref.repo;
  result.commit = info.commit;
  result.files = choice.files;
  result.name = request_.name.empty() ? store_name({ref.repo, choice.tag}) : request_.name;
  // A name the store would refuse is refused before the download, not after it.
  SYN_RETURN_IF_ERROR(check_alias_name(result.name));
  if (choice.files.size() == 1) {
    if (Result<StoredModel> stored = store_->find(result.name); stored.ok()) {
      stored_sha256_ = stored->source_sha256;
    }
  }
  // Interrupted downloads of other pulls, a week old, go; this pull's own are resumed.
  std::vector<std::string> keep;
  for (const HubFile& f : info.files) {
    if (std::find(choice.files.begin(), choice.files.end(), f.path) == choice.files.end()) continue;
    if (!f.lfs_sha256.empty()) keep.push_back(f.lfs_sha256 + ".partial");
    if (!f.git_blob_id.empty()) keep.push_back("git-" + f.git_blob_id + ".partial");
  }
  (void)remove_stale_partials(store_->directory(), kStalePartialAge, keep);  // best effort
  std::vector<Fetched> fetched;
  for (const std::string& file : choice.files) {
    SYN_RETURN_IF_ERROR(check_cancelled());
    const auto listed = std::find_if(info.files.begin(), info.files.end(),
                                     [&](const HubFile& f) { return f.path == file; });
    SYN_ASSIGN_OR_RETURN(
        Fetched f,
        fetch_online(file, listed == info.files.end() ? nullptr : &*listed, info.commit));
    fetched.push_back(std::move(f));
  }
  if (already_stored_) {
    std::error_code ignored;
    for (const Fetched& f : fetched) {
      if (f.owned) fs::remove(f.path, ignored);  // a non-LFS file found the same once fetched
    }
    SYN_ASSIGN_OR_RETURN(result.model, store_->find(result.name));
    result.sha256 = fetched[0].sha256;
    result.bytes = fetched[0].size;
    result.source = "store";
    report(PullStage::kSuccess, "success");
    return result;
  }
  result.source = reused_cache_ ? "huggingface-cache" : "download";
  return finish(std::move(result), std::move(fetched));
}

}  // namespace

Result<std::vector<std::string>> remove_stale_partials(const std::string& store_directory,
                                                       std::chrono::seconds max_age,
                                                       const std::vector<std::string>& keep,
                                                       bool dry_run) {
  std::vector<std::string> removed;
  const fs::path dir = fs::path(store_directory) / "downloads";
  std::error_code error;
  if (!fs::is_directory(dir, error)) return removed;
  const auto oldest = fs::file_time_type::clock::now() - max_age;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const fs::path path = it->path();
    const std::string name = path.filename().string();
    std::error_code file_error;
    if (!name.ends_with(".partial") || !it->is_regular_file(file_error)) continue;
    if (std::find(keep.begin(), keep.end(), name) != keep.end()) continue;
    const auto written = fs::last_write_time(path, file_error);
    if (file_error || written > oldest) continue;
    // A pull holding the file (download_verified's flock) is still working on it.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0 && (dry_run || ::unlink(path.c_str()) == 0)) {
      removed.push_back(path.string());
    }
    ::close(fd);
  }
  if (error) {
    return Status(ErrorCode::kIoError, "cannot list the downloads: " + error.message(),
                  ErrorWhere{.path = dir.string()});
  }
  return removed;
}

Result<PullResult> pull_model(const PullRequest& request, const PullProgressFn& on_progress,
                              const std::function<bool()>& cancelled) {
  return Puller(request, on_progress, cancelled).run();
}

}  // namespace synapse::hub
