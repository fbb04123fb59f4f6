// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for what `synapse pull` and model discovery read from other programs: the
// hub's model info JSON (first byte even) and Ollama's manifests (odd). Any input must parse or
// fail with an error value; an accepted model info names only safe relative paths, a commit id
// and SHA-256s; an accepted manifest names a SHA-256 (it becomes a blob file name).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "hub/local_models.h"
#include "hub/model_info.h"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace synapse::hub;
  if (size == 0) return 0;
  const std::string_view payload(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) {
    ModelInfoLimits limits;
    limits.max_files = 64;  // small, so the fuzzer reaches it
    const synapse::Result<ModelInfo> info = parse_model_info(payload, limits);
    if (!info.ok()) {
      require(info.status().code() != synapse::ErrorCode::kOk);
      return 0;
    }
    require(info->commit.size() == 40);
    require(info->files.size() <= limits.max_files);
    for (const HubFile& file : info->files) {
      require(is_safe_repo_path(file.path) && file.path.size() <= limits.max_path_bytes);
      require(file.lfs_sha256.empty() || is_sha256_hex(file.lfs_sha256));
      require(file.git_blob_id.empty() || is_git_object_id(file.git_blob_id));
    }
    return 0;
  }
  const synapse::Result<OllamaModelLayer> layer = parse_ollama_manifest(payload);
  if (!layer.ok()) {
    require(layer.status().code() != synapse::ErrorCode::kOk);
    return 0;
  }
  require(is_sha256_hex(layer->sha256));
  return 0;
}
