// SPDX-License-Identifier: Apache-2.0
#include "hub/local_models.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/echo.h"
#include "base/json_depth.h"
#include "hub/hub_ref.h"
#include "hub/model_info.h"

namespace synapse::hub {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr std::string_view kOllamaModelMediaType = "application/vnd.ollama.image.model";
constexpr size_t kMaxManifestBytes = 1u << 20;

bool is_gguf_name(const std::string& name) { return name.size() > 5 && name.ends_with(".gguf"); }

std::optional<std::string> read_small_file(const fs::path& path, size_t max_bytes) {
  std::error_code error;
  const auto size = fs::file_size(path, error);
  if (error || size > max_bytes) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// "models--ORG--REPO" <-> "ORG/REPO" (huggingface_hub's folder names).
std::string repo_folder(std::string_view repo) {
  std::string out = "models--";
  for (const char c : repo) {
    if (c == '/') {
      out += "--";
    } else {
      out += c;
    }
  }
  return out;
}

std::optional<std::string> repo_of_folder(const std::string& folder) {
  if (!folder.starts_with("models--")) return std::nullopt;
  const std::string rest = folder.substr(8);
  const size_t sep = rest.find("--");
  if (sep == std::string::npos) return std::nullopt;
  return rest.substr(0, sep) + "/" + rest.substr(sep + 2);
}

// A cached file and the SHA-256 its blob symlink names.
CachedFile cached_file(const fs::path& snapshot, const fs::path& entry) {
  CachedFile file;
  file.repo_path = entry.lexically_relative(snapshot).generic_string();
  file.path = entry.string();
  std::error_code error;
  if (fs::is_symlink(entry, error)) {
    const std::string target = fs::read_symlink(entry, error).filename().string();
    if (!error && is_sha256_hex(target)) file.sha256 = target;
  }
  file.bytes = fs::file_size(entry, error);
  if (error) file.bytes = 0;
  return file;
}

void discover_hf_cache(const HubConfig& config, std::vector<LocalModel>& out) {
  std::error_code error;
  std::set<std::string> seen;  // real paths: a blob shared by snapshots is one model
  for (const fs::directory_entry& repo_dir : fs::directory_iterator(config.hub_cache, error)) {
    const auto repo = repo_of_folder(repo_dir.path().filename().string());
    if (!repo) continue;
    const fs::path snapshots = repo_dir.path() / "snapshots";
    std::error_code inner;
    for (const fs::directory_entry& snapshot : fs::directory_iterator(snapshots, inner)) {
      std::error_code walk;
      for (auto it = fs::recursive_directory_iterator(snapshot.path(), walk);
           !walk && it != fs::recursive_directory_iterator(); it.increment(walk)) {
        if (!is_gguf_name(it->path().filename().string()) || !fs::is_regular_file(it->path())) {
          continue;
        }
        const std::string real = fs::canonical(it->path(), walk).string();
        if (walk || !seen.insert(real).second) continue;
        const CachedFile file = cached_file(snapshot.path(), it->path());
        const std::string q = quantization_of(file.repo_path);
        out.push_back({"hf.co/" + *repo + ":" + (q.empty() ? file.repo_path : q), file.path,
                       file.bytes, "huggingface", file.sha256});
      }
    }
  }
}

void discover_llama_cache(const HubConfig& config, std::vector<LocalModel>& out) {
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(config.llama_cache, error)) {
    const std::string name = entry.path().filename().string();
    if (!is_gguf_name(name) || !entry.is_regular_file()) continue;
    std::error_code size_error;
    const uint64_t bytes = entry.file_size(size_error);
    out.push_back({"llama.cpp:" + name.substr(0, name.size() - 5), entry.path().string(),
                   size_error ? 0 : bytes, "llama.cpp", ""});
  }
}

// manifests/HOST/NAMESPACE/NAME/TAG -> Ollama's spelling of the name.
std::string ollama_name(const std::string& host, const std::string& ns, const std::string& model,
                        const std::string& tag) {
  if (host == "registry.ollama.ai") {
    return (ns == "library" ? "" : ns + "/") + model + ":" + tag;
  }
  return host + "/" + ns + "/" + model + ":" + tag;
}

void discover_ollama(const HubConfig& config, std::vector<LocalModel>& out) {
  const fs::path manifests = fs::path(config.ollama_models) / "manifests";
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(manifests, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (it.depth() != 3 || !it->is_regular_file()) continue;
    const fs::path rel = it->path().lexically_relative(manifests);
    std::vector<std::string> parts;
    for (const fs::path& part : rel) parts.push_back(part.string());
    if (parts.size() != 4) continue;
    const auto text = read_small_file(it->path(), kMaxManifestBytes);
    if (!text) continue;
    const Result<OllamaModelLayer> layer = parse_ollama_manifest(*text);
    if (!layer.ok()) continue;
    const fs::path blob = fs::path(config.ollama_models) / "blobs" / ("sha256-" + layer->sha256);
    std::error_code size_error;
    const uint64_t bytes = fs::file_size(blob, size_error);
    if (size_error) continue;  // a manifest whose blob is gone: nothing to import
    out.push_back({ollama_name(parts[0], parts[1], parts[2], parts[3]), blob.string(), bytes,
                   "ollama", layer->sha256});
  }
}

bool safe_part(std::string_view part) {
  return !part.empty() && part != "." && part != ".." &&
         std::all_of(part.begin(), part.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
         });
}

}  // namespace

std::vector<LocalModel> discover_local_models(const HubConfig& config) {
  std::vector<LocalModel> out;
  discover_hf_cache(config, out);
  discover_llama_cache(config, out);
  discover_ollama(config, out);
  std::sort(out.begin(), out.end(), [](const LocalModel& a, const LocalModel& b) {
    return std::tie(a.source, a.name, a.path) < std::tie(b.source, b.name, b.path);
  });
  return out;
}

Result<OllamaModelLayer> parse_ollama_manifest(std::string_view json) {
  const auto bad = [](const std::string& what) {
    return Status(ErrorCode::kInvalidJson, "not an Ollama manifest: " + what);
  };
  if (json.size() > kMaxManifestBytes) return bad("too large");
  if (json_nesting_depth(json, 16) > 16) return bad("nested too deep");
  const Json doc = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return bad("not a JSON object");
  const auto layers = doc.find("layers");
  if (layers == doc.end() || !layers->is_array()) return bad("no 'layers' list");
  for (const Json& layer : *layers) {
    if (!layer.is_object()) return bad("a layer is not an object");
    const auto type = layer.find("mediaType");
    if (type == layer.end() || !type->is_string() || *type != kOllamaModelMediaType) continue;
    const auto digest = layer.find("digest");
    if (digest == layer.end() || !digest->is_string()) return bad("the model layer has no digest");
    const std::string text = digest->get<std::string>();
    if (!text.starts_with("sha256:") || !is_sha256_hex(text.substr(7))) {
      return bad("the model layer's digest is not sha256:HEX");
    }
    OllamaModelLayer out;
    out.sha256 = text.substr(7);
    const auto size = layer.find("size");
    if (size != layer.end()) {
      if (!size->is_number_unsigned()) return bad("the model layer's size is not a count");
      out.size = size->get<uint64_t>();
    }
    return out;
  }
  return bad("no layer of type " + std::string(kOllamaModelMediaType));
}

Result<LocalModel> find_ollama_model(const HubConfig& config, std::string_view name) {
  std::string model(name);
  std::string tag = "latest";
  const size_t colon = model.rfind(':');
  if (colon != std::string::npos && model.find('/', colon) == std::string::npos) {
    tag = model.substr(colon + 1);
    model.resize(colon);
  }
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t slash = model.find('/', start);
    parts.push_back(model.substr(start, slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (parts.size() == 1) parts.insert(parts.begin(), "library");
  if (parts.size() == 2) parts.insert(parts.begin(), "registry.ollama.ai");
  const bool valid =
      parts.size() == 3 && safe_part(tag) && std::all_of(parts.begin(), parts.end(), safe_part);
  if (!valid) {
    return Status(ErrorCode::kInvalidArgument,
                  "'" + clip_for_echo(name) + "' is not an Ollama model name (NAME[:TAG])",
                  ErrorWhere{.field = "from-ollama"});
  }
  const fs::path manifest =
      fs::path(config.ollama_models) / "manifests" / parts[0] / parts[1] / parts[2] / tag;
  const auto text = read_small_file(manifest, kMaxManifestBytes);
  if (!text) {
    return Status(ErrorCode::kNotFound,
                  "Ollama has no model '" + clip_for_echo(name) + "' in " + config.ollama_models +
                      " (set OLLAMA_MODELS if it keeps them elsewhere)",
                  ErrorWhere{.path = manifest.string()});
  }
  SYN_ASSIGN_OR_RETURN(const OllamaModelLayer layer, parse_ollama_manifest(*text));
  const fs::path blob = fs::path(config.ollama_models) / "blobs" / ("sha256-" + layer.sha256);
  std::error_code error;
  const uint64_t bytes = fs::file_size(blob, error);
  if (error) {
    return Status(ErrorCode::kNotFound,
                  "the blob of Ollama's '" + clip_for_echo(name) + "' is missing",
                  ErrorWhere{.path = blob.string()});
  }
  return LocalModel{ollama_name(parts[0], parts[1], parts[2], tag), blob.string(), bytes, "ollama",
                    layer.sha256};
}

std::optional<std::string> hf_cache_blob(const HubConfig& config, std::string_view repo,
                                         std::string_view sha256, uint64_t size) {
  if (config.hub_cache.empty() || !is_sha256_hex(sha256)) return std::nullopt;
  const fs::path blob =
      fs::path(config.hub_cache) / repo_folder(repo) / "blobs" / std::string(sha256);
  std::error_code error;
  if (!fs::is_regular_file(blob, error) || fs::file_size(blob, error) != size || error) {
    return std::nullopt;
  }
  return blob.string();
}

Result<CachedSnapshot> hf_cache_snapshot(const HubConfig& config, std::string_view repo,
                                         std::string_view revision) {
  const fs::path repo_dir = fs::path(config.hub_cache) / repo_folder(repo);
  CachedSnapshot snapshot;
  // A branch or tag name is resolved through refs/; a commit id names its snapshot directly.
  const auto is_hex_digit = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  if (revision.size() == 40 && std::all_of(revision.begin(), revision.end(), is_hex_digit)) {
    snapshot.commit = std::string(revision);
  } else if (safe_part(revision)) {
    const auto ref = read_small_file(repo_dir / "refs" / std::string(revision), 256);
    if (ref) {
      snapshot.commit = *ref;
      while (!snapshot.commit.empty() &&
             std::isspace(static_cast<unsigned char>(snapshot.commit.back()))) {
        snapshot.commit.pop_back();
      }
    }
  }
  const fs::path dir = repo_dir / "snapshots" / snapshot.commit;
  std::error_code error;
  if (snapshot.commit.empty() || !safe_part(snapshot.commit) || !fs::is_directory(dir, error)) {
    return Status(ErrorCode::kHubOffline,
                  "offline (HF_HUB_OFFLINE) and the Hugging Face cache has no snapshot of " +
                      std::string(repo) + " at '" + std::string(revision) + "'",
                  ErrorWhere{.path = repo_dir.string()});
  }
  for (auto it = fs::recursive_directory_iterator(dir, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (fs::is_regular_file(it->path())) snapshot.files.push_back(cached_file(dir, it->path()));
  }
  std::sort(snapshot.files.begin(), snapshot.files.end(),
            [](const CachedFile& a, const CachedFile& b) { return a.repo_path < b.repo_path; });
  return snapshot;
}

}  // namespace synapse::hub
