// SPDX-License-Identifier: Apache-2.0
// What `synapse pull` is given and which GGUF it means: a repository reference ("hf.co/ORG/REPO",
// "huggingface.co/ORG/REPO", "hf://ORG/REPO" or "ORG/REPO", optionally ":TAG"), the quantization
// a tag names in a file name, split sets ("NAME-00001-of-00003.gguf"), and the choice of file when
// no tag is given. Pure functions of names: no network, no files.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace synapse::hub {

struct HubRef {
  std::string repo;  // "ORG/REPO"
  std::string tag;   // "Q4_K_M", or empty
};

Result<HubRef> parse_hub_ref(std::string_view ref);

// The store name of a pulled model: "hf.co/ORG/REPO:TAG" (as Ollama names it).
std::string store_name(const HubRef& ref);

// Without a tag, the first of these a repository has is pulled (Q4_K_M first, as Ollama and
// llama.cpp's -hf do; then the other 4-5 bit K-quants, then larger, then smaller, then floats).
inline constexpr std::string_view kQuantizationPreference[] = {
    "Q4_K_M", "Q4_K_S", "Q5_K_M", "Q5_K_S", "Q4_0",   "IQ4_XS", "IQ4_NL", "Q6_K", "Q8_0", "Q5_0",
    "Q4_1",   "Q5_1",   "Q3_K_M", "Q3_K_L", "Q3_K_S", "IQ3_M",  "Q2_K",   "BF16", "F16",  "F32"};

// "NAME-00002-of-00005.gguf" (llama.cpp's gguf-split naming), 1-based index.
struct SplitName {
  std::string prefix;  // "NAME" (with any directory)
  uint32_t index = 0;
  uint32_t count = 0;
};
std::optional<SplitName> parse_split_name(std::string_view path);
std::string split_part_name(const SplitName& split, uint32_t index);

// The quantization a file name states in its last '-' or '.' separated part ("Q4_K_M",
// "IQ4_XS", "BF16"), in the file's spelling; empty when the name states none.
std::string quantization_of(std::string_view path);
// Whether the file name (without ".gguf" and a split suffix) ends with "-TAG" or ".TAG", case
// ignored.
bool file_matches_tag(std::string_view path, std::string_view tag);

struct GgufChoice {
  std::vector<std::string> files;  // one file, or every part of a split set in order
  std::string tag;                 // for the store name
};

// Chooses from a repository's file list: `exact_file` if given (a split part means its whole
// set), else the files matching `tag`, else the first quantization of kQuantizationPreference
// present, else the only GGUF. Projector files (mmproj) are never chosen by tag or default.
Result<GgufChoice> choose_gguf(std::span<const std::string> paths, std::string_view tag,
                               std::string_view exact_file, std::string_view repo);

}  // namespace synapse::hub
