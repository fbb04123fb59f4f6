// SPDX-License-Identifier: Apache-2.0
// The report behind `synapse inspect`: built once as JSON (the --json output) and rendered from
// that JSON as text, so both forms always say the same thing.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace synapse::cli {

// Opens and validates `path`; an invalid file gives a report with "valid": false and its error.
nlohmann::ordered_json build_inspect_report(const std::string& path, size_t max_array_elements);
// The report of a file that could not be opened (or a model name that could not be resolved).
nlohmann::ordered_json inspect_error_report(const std::string& path, const Status& error);
std::string render_inspect_text(const nlohmann::ordered_json& report, bool show_all_tensors);

}  // namespace synapse::cli
