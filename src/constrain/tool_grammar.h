// SPDX-License-Identifier: Apache-2.0
// The grammar of a reply that calls tools, in a template family's own syntax (the caller maps
// the family to a ToolCallFormat; this layer knows no families):
//   required / named: the reply is one call (or several, when parallel) and nothing else;
//   auto: free text, or free text that opens a call with the trigger, after which the call's
//   grammar applies — a lazily triggered grammar, written as one grammar: the text before the
//   trigger is a lexeme that cannot contain the trigger.
// Each call's arguments must satisfy that function's `parameters` schema.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "constrain/grammar.h"
#include "constrain/json_schema.h"

namespace synapse::constrain {

struct ToolCallFormat {
  std::string open;       // before each call, e.g. "<tool_call>\n"; "" when the JSON opens it
  std::string close;      // after each call, e.g. "\n</tool_call>"
  std::string separator;  // between calls
  std::string list_open;  // list form: "[TOOL_CALLS]" then a JSON array of calls
  std::string arguments_key = "arguments";
  bool parallel = true;
};

struct ToolFunction {
  std::string name;
  nlohmann::ordered_json parameters;  // a JSON Schema; null: any JSON object
};

enum class ToolMode { kRequired, kAuto };

// `content` (optional): in auto mode, the grammar of a reply that calls nothing (e.g. a
// response_format schema); without it, free text.
Result<Grammar> compile_tool_grammar(const ToolCallFormat& format,
                                     const std::vector<ToolFunction>& functions, ToolMode mode,
                                     const nlohmann::ordered_json* content_schema,
                                     const JsonSchemaOptions& options = {});

}  // namespace synapse::constrain
