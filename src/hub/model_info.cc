// SPDX-License-Identifier: Apache-2.0
#include "hub/model_info.h"

#include <nlohmann/json.hpp>

#include "base/json_depth.h"

namespace synapse::hub {
namespace {

using Json = nlohmann::json;

Status bad(const std::string& what) {
  return Status(ErrorCode::kHubUnavailable, "the hub's model info is malformed: " + what,
                ErrorWhere{.field = "model_info"});
}

bool is_hex(std::string_view text) {
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

bool is_sha256_hex(std::string_view text) { return text.size() == 64 && is_hex(text); }
bool is_git_object_id(std::string_view text) { return text.size() == 40 && is_hex(text); }

bool is_safe_repo_path(std::string_view path) {
  if (path.empty() || path.front() == '/') return false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view segment = path.substr(start, end - start);
    if (segment.empty() || segment == "." || segment == "..") return false;
    start = end + 1;
  }
  for (const char c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '\\') return false;
  }
  return true;
}

Result<ModelInfo> parse_model_info(std::string_view json, const ModelInfoLimits& limits) {
  if (json.size() > limits.max_bytes) return bad("larger than the limit");
  if (json_nesting_depth(json, limits.max_depth) > limits.max_depth) return bad("nested too deep");
  const Json doc = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return bad("not a JSON object");
  ModelInfo info;
  const auto sha = doc.find("sha");
  if (sha == doc.end() || !sha->is_string()) return bad("no commit ('sha')");
  info.commit = sha->get<std::string>();
  if (info.commit.size() != 40 || !is_hex(info.commit)) return bad("'sha' is not a commit id");
  const auto siblings = doc.find("siblings");
  if (siblings == doc.end() || !siblings->is_array()) return bad("no file list ('siblings')");
  if (siblings->size() > limits.max_files) return bad("too many files");
  for (const Json& sibling : *siblings) {
    if (!sibling.is_object()) return bad("a sibling is not an object");
    const auto name = sibling.find("rfilename");
    if (name == sibling.end() || !name->is_string()) return bad("a sibling has no 'rfilename'");
    HubFile file;
    file.path = name->get<std::string>();
    if (file.path.size() > limits.max_path_bytes || !is_safe_repo_path(file.path)) {
      return bad("unsafe file name in 'rfilename'");
    }
    const auto size = sibling.find("size");
    if (size != sibling.end()) {
      if (!size->is_number_unsigned()) return bad("'size' of " + file.path + " is not a count");
      file.size = size->get<uint64_t>();
    }
    const auto blob_id = sibling.find("blobId");
    if (blob_id != sibling.end() && !blob_id->is_null()) {
      if (!blob_id->is_string() || !is_git_object_id(blob_id->get<std::string>())) {
        return bad("'blobId' of " + file.path + " is not a git object id");
      }
      file.git_blob_id = blob_id->get<std::string>();
    }
    const auto lfs = sibling.find("lfs");
    if (lfs != sibling.end() && !lfs->is_null()) {
      if (!lfs->is_object()) return bad("'lfs' of " + file.path + " is not an object");
      const auto oid = lfs->find("sha256");
      if (oid == lfs->end() || !oid->is_string() || !is_sha256_hex(oid->get<std::string>())) {
        return bad("'lfs.sha256' of " + file.path + " is not a SHA-256");
      }
      file.lfs_sha256 = oid->get<std::string>();
      const auto lfs_size = lfs->find("size");
      if (lfs_size != lfs->end()) {
        if (!lfs_size->is_number_unsigned()) return bad("'lfs.size' of " + file.path);
        // The LFS object's size is the file's: the two never disagree on the real hub.
        if (file.size && *file.size != lfs_size->get<uint64_t>()) {
          return bad("'size' and 'lfs.size' of " + file.path + " disagree");
        }
        file.size = lfs_size->get<uint64_t>();
      }
    }
    info.files.push_back(std::move(file));
  }
  return info;
}

}  // namespace synapse::hub
