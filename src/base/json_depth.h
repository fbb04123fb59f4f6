// SPDX-License-Identifier: Apache-2.0
// The nesting depth of JSON text, found by a linear scan that skips strings, so that input nested
// too deeply is refused before a recursive parser (nlohmann's parse, dump and destructor recurse
// per level) can exhaust the stack. Over-approximates on invalid JSON, which the parser rejects
// anyway.
#pragma once

#include <string_view>

namespace synapse {

// The deepest nesting of [ and { outside strings; the scan stops early once it exceeds `stop_at`
// (returning a value > stop_at).
int json_nesting_depth(std::string_view text, int stop_at);

}  // namespace synapse
