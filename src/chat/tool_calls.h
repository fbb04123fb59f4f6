// SPDX-License-Identifier: Apache-2.0
// How each template family writes a tool call, and the reading of a model's reply back into
// OpenAI's `tool_calls`, whole or as streaming deltas.
//
//   chatml (Qwen 2.5/3, Hermes):  <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//   llama3 (3.1/3.2 JSON):        {"name": "f", "parameters": {...}}
//   mistral:                      [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]
//   lfm2:                         <|tool_call_start|>[{"name": "f", "arguments": {...}}, ...]
// Families with no tool-call convention use the chatml (Hermes) form, which the grammar then
// forces; in `auto` mode such a model only calls a tool if it writes that form itself.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_template.h"

namespace synapse::chat {

struct ToolCallSyntax {
  std::string open;        // before each call ("" when a call opens with its JSON object)
  std::string close;       // after each call
  std::string separator;   // between two calls
  std::string list_open;   // list form (mistral): the calls are one JSON array
  std::string list_close;  // ... closed by this
  std::string arguments_key = "arguments";  // "parameters" for Llama 3
  bool parallel = true;                     // the family can write more than one call per reply
  // The JSON object of one call, up to its arguments value: {"name": "f", "arguments":
  std::string envelope(std::string_view function) const;
  std::string trigger() const { return list_open.empty() ? open : list_open; }
};

ToolCallSyntax tool_call_syntax(TemplateFamily family);

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // the arguments' JSON text as the model wrote it
};

struct ParsedReply {
  std::string content;  // text before the first call
  std::vector<ParsedToolCall> calls;
};

// Reads a whole reply. A call that does not parse (cut short by max_tokens, malformed in auto
// mode) leaves the reply as content from that point on, as llama-server does.
ParsedReply parse_tool_calls(std::string_view text, const ToolCallSyntax& syntax);

// The same reading, incrementally: feed the reply's text as it is generated and get OpenAI's
// deltas. Text that may still turn out to be the start of a call is held back until it is
// known not to be.
class ToolCallStream {
 public:
  struct Delta {
    std::string content;  // content text to send now
    // Per call started or continued in this piece: index, then name (first delta only),
    // then argument text.
    struct Call {
      size_t index = 0;
      bool first = false;  // carries the id, type and name
      std::string name;
      std::string arguments;
    };
    std::vector<Call> calls;
  };

  explicit ToolCallStream(ToolCallSyntax syntax);
  Delta push(std::string_view text);
  Delta finish();  // end of the reply: what was held back, as content if it is no call
  size_t calls_started() const { return sent_.size(); }

 private:
  Delta step(bool at_end);

  ToolCallSyntax syntax_;
  std::string reply_;         // the whole reply so far (re-read at each step: replies are short)
  size_t emitted_ = 0;        // bytes of content already sent
  std::vector<size_t> sent_;  // per call started: bytes of its arguments already sent
  bool in_call_ = false;
};

}  // namespace synapse::chat
