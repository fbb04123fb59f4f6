// SPDX-License-Identifier: Apache-2.0
// GGUFs other tools have already put on this machine: the Hugging Face cache
// (models--ORG--REPO/snapshots/REV/..., blobs named by their SHA-256), llama.cpp's download cache,
// and Ollama's models directory (manifests/HOST/NAMESPACE/NAME/TAG naming blobs/sha256-HEX).
// Discovery only reads; importing one is the store's job. The manifest parser reads files another
// program wrote and is fuzzed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "hub/hub_config.h"

namespace synapse::hub {

struct LocalModel {
  std::string name;  // "hf.co/ORG/REPO:FILE", "llama.cpp:FILE", "NAME:TAG" (Ollama)
  std::string path;  // the file to import
  uint64_t bytes = 0;
  std::string source;  // "huggingface", "llama.cpp", "ollama"
  std::string sha256;  // when the layout names it (HF blob, Ollama digest), else empty
};

// Every GGUF found in the three places (missing directories are skipped), sorted by source and
// name; the same blob under several snapshots is listed once.
std::vector<LocalModel> discover_local_models(const HubConfig& config);

// The model layer of an Ollama manifest (mediaType application/vnd.ollama.image.model).
struct OllamaModelLayer {
  std::string sha256;  // hex
  uint64_t size = 0;
};
Result<OllamaModelLayer> parse_ollama_manifest(std::string_view json);

// "NAME[:TAG]" (tag default "latest"; "user/NAME", "host/ns/NAME" as Ollama spells them) to the
// manifest's model blob.
Result<LocalModel> find_ollama_model(const HubConfig& config, std::string_view name);

// The Hugging Face cache's copy of a repository's LFS object, if present with that size.
std::optional<std::string> hf_cache_blob(const HubConfig& config, std::string_view repo,
                                         std::string_view sha256, uint64_t size);

// A revision's snapshot in the Hugging Face cache (offline mode): the commit, and each file's
// path under the snapshot with the SHA-256 its blob is named by.
struct CachedFile {
  std::string repo_path;  // as in the repository
  std::string path;       // on disk
  std::string sha256;     // empty when the file is no symlink to a SHA-256-named blob
  uint64_t bytes = 0;
};
struct CachedSnapshot {
  std::string commit;
  std::vector<CachedFile> files;
};
Result<CachedSnapshot> hf_cache_snapshot(const HubConfig& config, std::string_view repo,
                                         std::string_view revision);

}  // namespace synapse::hub
