// SPDX-License-Identifier: Apache-2.0
#include "hub/hub_ref.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "base/echo.h"

namespace synapse::hub {
namespace {

std::string lowercase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool ends_with_gguf(std::string_view path) {
  return path.size() > 5 && lowercase(path.substr(path.size() - 5)) == ".gguf";
}

std::string_view basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The file name without directory, ".gguf" and split suffix: what tags are matched against.
std::string stem_of(std::string_view path) {
  std::string name(basename(path));
  if (ends_with_gguf(name)) name.resize(name.size() - 5);
  if (const auto split = parse_split_name(path)) {
    name = std::string(basename(split->prefix));
  }
  return name;
}

// Hub names: 1 to 96 characters from [A-Za-z0-9._-], not "." or "..".
bool valid_name_part(std::string_view part) {
  if (part.empty() || part.size() > 96 || part == "." || part == "..") return false;
  return std::all_of(part.begin(), part.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

bool looks_like_quantization(std::string_view part) {
  const std::string p = lowercase(part);
  for (const std::string_view start : {"iq", "tq", "q", "bf", "f", "mxfp"}) {
    if (p.starts_with(start) && p.size() > start.size() &&
        std::isdigit(static_cast<unsigned char>(p[start.size()]))) {
      return std::all_of(p.begin(), p.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
      });
    }
  }
  return false;
}

bool is_projector(std::string_view path) {
  return lowercase(basename(path)).find("mmproj") != std::string::npos;
}

}  // namespace

Result<HubRef> parse_hub_ref(std::string_view ref) {
  const auto bad = [&ref](const std::string& why) {
    return Status(ErrorCode::kInvalidArgument,
                  "'" + clip_for_echo(ref) + "' is not a hub model reference: " + why +
                      " (expected hf.co/ORG/REPO[:TAG])",
                  ErrorWhere{.field = "model"});
  };
  std::string_view rest = ref;
  for (const std::string_view prefix :
       {"https://huggingface.co/", "https://hf.co/", "http://huggingface.co/", "hf://",
        "huggingface.co/", "hf.co/"}) {
    if (rest.starts_with(prefix)) {
      rest.remove_prefix(prefix.size());
      break;
    }
  }
  HubRef out;
  const size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos) {
    out.tag = std::string(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
    if (out.tag.empty() || out.tag.size() > 64 || !valid_name_part(out.tag)) {
      return bad("the tag after ':' must be 1 to 64 letters, digits, '.', '_' or '-'");
    }
  }
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || rest.find('/', slash + 1) != std::string_view::npos ||
      !valid_name_part(rest.substr(0, slash)) || !valid_name_part(rest.substr(slash + 1))) {
    return bad("it must name ORG/REPO");
  }
  out.repo = std::string(rest);
  // ":latest" is Ollama's default tag: the default choice.
  if (lowercase(out.tag) == "latest") out.tag.clear();
  return out;
}

std::string store_name(const HubRef& ref) { return "hf.co/" + ref.repo + ":" + ref.tag; }

std::optional<SplitName> parse_split_name(std::string_view path) {
  // "-00001-of-00003.gguf": five digits each, as llama.cpp's gguf-split writes them.
  constexpr std::string_view kOf = "-of-";
  if (!ends_with_gguf(path)) return std::nullopt;
  const std::string_view stem = path.substr(0, path.size() - 5);
  if (stem.size() < 15) return std::nullopt;
  const std::string_view tail = stem.substr(stem.size() - 15);  // "-00001-of-00003"
  if (tail[0] != '-' || tail.substr(6, 4) != kOf) return std::nullopt;
  const auto number = [](std::string_view digits) -> std::optional<uint32_t> {
    uint32_t n = 0;
    for (const char c : digits) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
      n = n * 10 + static_cast<uint32_t>(c - '0');
    }
    return n;
  };
  const auto index = number(tail.substr(1, 5));
  const auto count = number(tail.substr(10, 5));
  if (!index || !count || *index == 0 || *index > *count) return std::nullopt;
  return SplitName{std::string(stem.substr(0, stem.size() - 15)), *index, *count};
}

std::string split_part_name(const SplitName& split, uint32_t index) {
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "-%05u-of-%05u.gguf", index, split.count);
  return split.prefix + suffix;
}

std::string quantization_of(std::string_view path) {
  const std::string stem = stem_of(path);
  const size_t sep = stem.find_last_of("-.");
  const std::string last = sep == std::string::npos ? stem : stem.substr(sep + 1);
  return looks_like_quantization(last) ? last : std::string();
}

bool file_matches_tag(std::string_view path, std::string_view tag) {
  const std::string stem = lowercase(stem_of(path));
  const std::string t = lowercase(tag);
  if (t.empty() || !stem.ends_with(t)) return false;
  if (stem.size() == t.size()) return true;
  const char before = stem[stem.size() - t.size() - 1];
  return before == '-' || before == '.';
}

Result<GgufChoice> choose_gguf(std::span<const std::string> paths, std::string_view tag,
                               std::string_view exact_file, std::string_view repo) {
  // One entry per model: a single file, or the first part of a split set.
  std::vector<std::string> models;
  std::map<std::string, std::vector<uint32_t>> parts;  // split prefix -> indices present
  for (const std::string& path : paths) {
    if (!ends_with_gguf(path)) continue;
    if (const auto split = parse_split_name(path)) {
      parts[split->prefix].push_back(split->index);
      if (split->index == 1) models.push_back(path);
    } else {
      models.push_back(path);
    }
  }
  std::sort(models.begin(), models.end());
  const auto expand = [&](const std::string& model) -> Result<std::vector<std::string>> {
    const auto split = parse_split_name(model);
    if (!split) return std::vector<std::string>{model};
    std::vector<uint32_t> have = parts[split->prefix];
    std::sort(have.begin(), have.end());
    std::vector<std::string> files;
    for (uint32_t i = 1; i <= split->count; ++i) {
      if (!std::binary_search(have.begin(), have.end(), i)) {
        return Status(ErrorCode::kHubNotFound,
                      std::string(repo) + " lacks part " + std::to_string(i) + " of the split " +
                          "set " + model,
                      ErrorWhere{.path = model});
      }
      files.push_back(split_part_name(*split, i));
    }
    return files;
  };
  const auto chosen = [&](const std::string& model, std::string tag_name) -> Result<GgufChoice> {
    SYN_ASSIGN_OR_RETURN(std::vector<std::string> files, expand(model));
    if (tag_name.empty()) tag_name = quantization_of(model);
    if (tag_name.empty()) tag_name = stem_of(model);
    return GgufChoice{std::move(files), std::move(tag_name)};
  };
  const auto available = [&] {
    std::string list;
    for (const std::string& m : models) {
      const std::string q = quantization_of(m);
      list += (list.empty() ? "" : ", ") + (q.empty() ? m : q);
    }
    return list.empty() ? std::string("no GGUF files") : list;
  };

  if (!exact_file.empty()) {
    for (const std::string& path : paths) {
      if (path != exact_file) continue;
      if (!ends_with_gguf(path)) {
        return Status(ErrorCode::kInvalidArgument, "'" + path + "' is not a GGUF file",
                      ErrorWhere{.field = "file"});
      }
      const auto split = parse_split_name(path);
      const std::string first = split ? split_part_name(*split, 1) : path;
      const std::string q = quantization_of(first);
      return chosen(first, q.empty() ? stem_of(first) : q);
    }
    return Status(ErrorCode::kHubNotFound,
                  std::string(repo) + " has no file '" + clip_for_echo(exact_file) + "'",
                  ErrorWhere{.field = "file"});
  }
  if (!tag.empty()) {
    for (const std::string& model : models) {
      if (is_projector(model) || !file_matches_tag(model, tag)) continue;
      const std::string q = quantization_of(model);
      // The file's spelling, so that ":q8_0" and ":Q8_0" name one stored model.
      const bool same = q.size() == tag.size() && lowercase(q) == lowercase(tag);
      return chosen(model, same ? q : std::string(tag));
    }
    return Status(ErrorCode::kHubNotFound,
                  std::string(repo) + " has no GGUF for the tag '" + std::string(tag) +
                      "'; it has: " + available(),
                  ErrorWhere{.field = "tag"});
  }
  for (const std::string_view quantization : kQuantizationPreference) {
    for (const std::string& model : models) {
      if (!is_projector(model) && file_matches_tag(model, quantization)) {
        return chosen(model, quantization_of(model));
      }
    }
  }
  std::vector<std::string> plain;
  for (const std::string& model : models) {
    if (!is_projector(model)) plain.push_back(model);
  }
  if (plain.size() == 1) return chosen(plain[0], {});
  if (plain.empty()) {
    return Status(ErrorCode::kHubNotFound, std::string(repo) + " has no GGUF file to pull");
  }
  return Status(ErrorCode::kInvalidArgument,
                std::string(repo) + " has several GGUF files and none of a default " +
                    "quantization; name one with :TAG or --file: " + available(),
                ErrorWhere{.field = "tag"});
}

}  // namespace synapse::hub
