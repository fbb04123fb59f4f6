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
#pragma once

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

struct PullProgress {
  std::string status;  // "pulling manifest", "pulling <digest>", "verifying sha256 digest",
                       // "joining 3 parts", "importing", "success"
  std::string digest;  // "sha256:HEX" of the file being fetched or verified, else empty
  uint64_t total = 0;  // bytes, 0 when the step is not counted
  uint64_t completed = 0;
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

}  // namespace synapse::hub
