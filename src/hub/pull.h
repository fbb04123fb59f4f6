// SPDX-License-Identifier: Apache-2.0
// `synapse pull` as a library call, for the CLI and for the server's /api/pull: a hub reference
// to a verified GGUF in the model store. Steps: the model info (commit, files, LFS SHA-256s), the
// file chosen by tag or preference (hub_ref.h), each file's metadata (HEAD), then a verified copy:
// the Hugging Face cache's blob when it is there and hashes right, else a resumable download into
// <store>/downloads/<sha256>.partial; split sets are joined; the GGUF is imported under
// "hf.co/ORG/REPO:TAG" and the download deleted. Nothing enters the store unverified. Offline
// (HF_HUB_OFFLINE) uses the Hugging Face cache or what the store already holds, never the network.
//
// Progress events follow Ollama's /api/pull stream: a status text, and for byte-counted steps the
// digest being worked on with total and completed bytes.
//
// A file the hub keeps in git rather than LFS has no SHA-256 there: it is verified by its git
// blob id instead (the model info's `blobId`, the plain ETag of resolve). Partial downloads older
// than a week are removed when a pull starts downloading (remove_stale_partials, which
// `synapse models gc` calls too).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "hub/hub_config.h"
#include "store/model_store.h"

namespace synapse::hub {

struct PullRequest {
  std::string model;                // "hf.co/ORG/REPO[:TAG]", "hf://ORG/REPO", "ORG/REPO", ...
  std::string file;                 // an exact repository file instead of a tag
  std::string revision = "main";    // branch, tag or commit
  std::string name;                 // store name; default "hf.co/ORG/REPO:TAG"
  std::string store_directory;      // empty: default_store_directory()
  std::optional<HubConfig> config;  // empty: HubConfig::from_environment()
  std::string created_by = "synapse";
};

// What a progress event is about, for callers that do not want to read the status text.
enum class PullStage { kManifest, kDownload, kVerify, kJoin, kImport, kSuccess };

struct PullProgress {
  std::string status;  // "pulling manifest", "pulling <digest>", "verifying sha256 digest",
                       // "joining 3 parts", "importing", "success"
  std::string digest;  // "sha256:HEX" of the file being fetched or verified, else empty
  uint64_t total = 0;  // bytes, 0 when the step is not counted
  uint64_t completed = 0;
  PullStage stage = PullStage::kManifest;
  std::string file;  // the repository path downloaded or verified, else empty
};
using PullProgressFn = std::function<void(const PullProgress&)>;

struct PullResult {
  std::string name;  // the store name
  std::string repo;
  std::string commit;              // empty when offline from the store
  std::vector<std::string> files;  // repository paths pulled (a split set: every part)
  std::string sha256;              // the GGUF's (a single file: its LFS oid)
  uint64_t bytes = 0;              // of the GGUF(s) fetched or reused
  // Where the bytes came from: "download", "huggingface-cache", "store" (already pulled).
  std::string source;
  StoredModel model;
};

Result<PullResult> pull_model(const PullRequest& request, const PullProgressFn& on_progress,
                              const std::function<bool()>& cancelled);

// How old an interrupted download may get before it is removed rather than resumed.
inline constexpr std::chrono::hours kStalePartialAge{24 * 7};

// Removes the partial downloads (*.partial) in the store's download directory last written more
// than `max_age` ago, except those named in `keep` (file names, as a pull resumes them) and those
// a running pull holds (its flock). Returns the paths removed (with `dry_run`, those it would
// remove); a store without downloads has none.
Result<std::vector<std::string>> remove_stale_partials(const std::string& store_directory,
                                                       std::chrono::seconds max_age,
                                                       const std::vector<std::string>& keep = {},
                                                       bool dry_run = false);

}  // namespace synapse::hub
