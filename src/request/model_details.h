// SPDX-License-Identifier: Apache-2.0
// What Ollama's /api/tags, /api/ps and /api/show say about a model, read from its file without
// loading it: the `details` (container format, family, parameter size, quantization), the
// scalar metadata as `model_info`, and the text of its end-of-generation tokens. Only the
// header and the tensor table are parsed (no weight is read), and the result is cached by
// (path, size, modification time), so a listing parses each header once, not on every call.
// The family is the file's own general.architecture string: nothing here names architectures.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace synapse::request {

struct ModelDetails {
  std::string format;              // the container: "gguf", or "synapse" for a package
  std::string family;              // general.architecture as written; empty when missing
  uint64_t parameter_count = 0;    // general.parameter_count, else counted from tensor shapes
  std::string parameter_size;      // the count as Ollama writes it: "494.03M", "7.2B"
  std::string quantization_level;  // "Q4_K_M": general.file_type, else the commonest weight type
  // Every metadata key with a scalar or string value, sorted; arrays (vocabularies, merges) are
  // null, as Ollama shows them unless asked to be verbose; the chat template is left out (show
  // gives it as `template`). general.parameter_count is always there.
  nlohmann::ordered_json model_info = nlohmann::ordered_json::object();
  std::vector<std::string> stop;  // the EOS / EOT / EOM tokens' text, when the file names them
};

// The details of the model file at `path`. Errors: the file reader's (not_found, bad_magic,
// truncated, ...); a failure is cached like a success until the file changes.
Result<std::shared_ptr<const ModelDetails>> read_model_details(const std::string& path);

// A count as Ollama writes a parameter size: "7B", "7.2B", "494.03M", "33K", "950".
std::string parameter_size_text(uint64_t count);
// llama.cpp's name of a general.file_type value ("Q4_K_M" for 15); empty when unknown.
std::string_view file_type_name(uint32_t file_type);

}  // namespace synapse::request
