// SPDX-License-Identifier: Apache-2.0
// The error-code table as Markdown: the generated part of docs/errors.md, so that the document
// cannot drift from the codes the service answers with (error_code_doc_test compares them).
#pragma once

#include <string>
#include <string_view>

namespace synapse {

// The lines docs/errors.md holds between these two markers are error_codes_markdown()'s output.
inline constexpr std::string_view kErrorDocBegin =
    "<!-- BEGIN generated from src/base/error_code.cc; see error_code_doc_test -->";
inline constexpr std::string_view kErrorDocEnd = "<!-- END generated -->";

// One table row per code in numeric order (name, number, HTTP status, retry class, default
// retry delay, summary), then the retired names and what replaced them.
std::string error_codes_markdown();

}  // namespace synapse
