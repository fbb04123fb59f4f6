// SPDX-License-Identifier: Apache-2.0
#include "chat/tool_calls.h"

#include <algorithm>

namespace synapse::chat {
namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// How far a scan of the reply got: matched, needs more text, or cannot be a call.
enum class Scan { kMatched, kMore, kMismatch };

// A cursor over the reply for the call grammar. Every `expect` either consumes what it wants,
// reports that the text ends too early to tell, or that it does not match.
class Cursor {
 public:
  explicit Cursor(std::string_view text, size_t pos = 0) : text_(text), pos_(pos) {}
  size_t pos() const { return pos_; }
  bool at_end() const { return pos_ >= text_.size(); }
  void skip_space() {
    while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
  }
  Scan literal(std::string_view want) {
    const size_t have = std::min(want.size(), text_.size() - pos_);
    if (text_.substr(pos_, have) != want.substr(0, have)) return Scan::kMismatch;
    if (have < want.size()) return Scan::kMore;
    pos_ += want.size();
    return Scan::kMatched;
  }
  // A JSON string without escapes (function names), returning its content.
  Scan plain_string(std::string& out) {
    if (at_end()) return Scan::kMore;
    if (text_[pos_] != '"') return Scan::kMismatch;
    const size_t close = text_.find('"', pos_ + 1);
    if (close == std::string_view::npos) return Scan::kMore;
    out.assign(text_.substr(pos_ + 1, close - pos_ - 1));
    if (out.find('\\') != std::string::npos) return Scan::kMismatch;
    pos_ = close + 1;
    return Scan::kMatched;
  }
  // One JSON value, by bracket depth and string state (the grammar already made it valid
  // when the reply was constrained; an unconstrained one is checked when parsed whole).
  Scan json_value() {
    int depth = 0;
    bool in_string = false;
    bool escaped = false;
    bool started = false;
    for (size_t i = pos_; i < text_.size(); ++i) {
      const char c = text_[i];
      if (in_string) {
        if (escaped) {
          escaped = false;
        } else if (c == '\\') {
          escaped = true;
        } else if (c == '"') {
          in_string = false;
          if (depth == 0) {
            pos_ = i + 1;
            return Scan::kMatched;
          }
        }
        continue;
      }
      if (c == '"') {
        in_string = true;
        started = true;
      } else if (c == '{' || c == '[') {
        ++depth;
        started = true;
      } else if (c == '}' || c == ']') {
        if (depth == 0) {
          if (!started) return Scan::kMismatch;
          pos_ = i;  // a bare value ends where its container closes
          return Scan::kMatched;
        }
        if (--depth == 0) {
          pos_ = i + 1;
          return Scan::kMatched;
        }
      } else if (depth == 0 && (c == ',' || is_space(c))) {
        if (!started) {
          if (is_space(c)) continue;
          return Scan::kMismatch;
        }
        pos_ = i;
        return Scan::kMatched;
      } else {
        started = true;
      }
    }
    return Scan::kMore;
  }

 private:
  std::string_view text_;
  size_t pos_;
};

// One call's place in the reply.
struct CallScan {
  std::string name;
  bool named = false;  // the name is complete
  size_t arguments_begin = 0;
  size_t arguments_end = 0;  // so far
  bool arguments_done = false;
  bool done = false;  // the whole call, its close included
  size_t end = 0;     // past the call when done
};

// Reads one call's JSON object starting at `pos`: {"name": "f", "<arguments_key>": VALUE}.
Scan scan_call_object(std::string_view text, size_t pos, const ToolCallSyntax& syntax,
                      CallScan& call) {
  Cursor c(text, pos);
  c.skip_space();
  Scan s = c.literal("{");
  if (s != Scan::kMatched) return s;
  c.skip_space();
  if ((s = c.literal("\"name\"")) != Scan::kMatched) return s;
  c.skip_space();
  if ((s = c.literal(":")) != Scan::kMatched) return s;
  c.skip_space();
  if ((s = c.plain_string(call.name)) != Scan::kMatched) return s;
  call.named = true;
  c.skip_space();
  if ((s = c.literal(",")) != Scan::kMatched) return s;
  c.skip_space();
  if ((s = c.literal("\"" + syntax.arguments_key + "\"")) != Scan::kMatched) return s;
  c.skip_space();
  if ((s = c.literal(":")) != Scan::kMatched) return s;
  c.skip_space();
  call.arguments_begin = c.pos();
  call.arguments_end = text.size();
  if (c.at_end()) return Scan::kMore;
  if ((s = c.json_value()) != Scan::kMatched) return s;
  call.arguments_end = c.pos();
  call.arguments_done = true;
  c.skip_space();
  if ((s = c.literal("}")) != Scan::kMatched) return s;
  call.end = c.pos();
  return Scan::kMatched;
}

struct ReplyScan {
  size_t content_end = 0;  // content is reply[0, content_end)
  std::vector<CallScan> calls;
  bool calls_broken = false;  // a call failed to parse: the rest is content
};

// Where the trigger may start: the first occurrence, or (not at the end) the start of a suffix
// that is a proper prefix of it, which must be held back.
size_t trigger_position(std::string_view text, std::string_view trigger, bool at_end, bool& found) {
  const size_t at = text.find(trigger);
  found = at != std::string_view::npos;
  if (found) return at;
  if (at_end) return text.size();
  for (size_t keep = std::min(trigger.size() - 1, text.size()); keep > 0; --keep) {
    if (text.substr(text.size() - keep) == trigger.substr(0, keep)) return text.size() - keep;
  }
  return text.size();
}

ReplyScan scan_reply(std::string_view text, const ToolCallSyntax& syntax, bool at_end) {
  ReplyScan out;
  size_t pos = 0;
  const std::string trigger = syntax.trigger();
  if (trigger.empty()) {
    // The reply is a call when its first non-space character opens a JSON object.
    size_t first = 0;
    while (first < text.size() && is_space(text[first])) ++first;
    if (first == text.size()) {
      out.content_end = at_end ? text.size() : 0;
      return out;
    }
    if (text[first] != '{') {
      out.content_end = text.size();
      return out;
    }
    pos = first;
  } else {
    bool found = false;
    pos = trigger_position(text, trigger, at_end, found);
    out.content_end = pos;
    if (!found) return out;
    pos += trigger.size();
  }
  out.content_end = std::min(out.content_end, pos);
  if (trigger.empty()) out.content_end = 0;
  // The calls, one after another.
  const bool list = !syntax.list_open.empty();
  if (list) {
    Cursor c(text, pos);
    c.skip_space();
    const Scan s = c.literal("[");
    if (s == Scan::kMismatch) out.calls_broken = true;
    if (s != Scan::kMatched) return out;
    pos = c.pos();
  }
  while (true) {
    CallScan call;
    const Scan s = scan_call_object(text, pos, syntax, call);
    if (s == Scan::kMismatch) {
      out.calls_broken = true;
      if (call.named) out.calls.push_back(call);
      return out;
    }
    if (s == Scan::kMore) {
      if (call.named) out.calls.push_back(call);
      return out;
    }
    pos = call.end;
    Cursor c(text, pos);
    // The close, then another call or the end.
    std::string_view close = list ? std::string_view() : std::string_view(syntax.close);
    while (!close.empty() && is_space(close.front())) close.remove_prefix(1);
    c.skip_space();
    if (!close.empty()) {
      const Scan closed = c.literal(close);
      if (closed != Scan::kMatched) {
        out.calls_broken = closed == Scan::kMismatch;
        out.calls.push_back(call);
        return out;
      }
    }
    call.done = true;
    call.end = c.pos();
    out.calls.push_back(call);
    pos = c.pos();
    c.skip_space();
    if (list) {
      if (c.literal(",") == Scan::kMatched) {
        pos = c.pos();
        continue;
      }
      if (c.literal("]") == Scan::kMatched) return out;
      if (!c.at_end()) out.calls_broken = true;
      return out;
    }
    if (c.at_end()) return out;
    if (!syntax.open.empty() && c.literal(syntax.open) != Scan::kMismatch) {
      pos = c.pos();
      if (c.literal(syntax.open) == Scan::kMore) return out;  // the next open is still arriving
      c = Cursor(text, pos);
      c.skip_space();
      c.literal(syntax.open);
      pos = c.pos();
      continue;
    }
    out.calls_broken = true;
    return out;
  }
}

}  // namespace

std::string ToolCallSyntax::envelope(std::string_view function) const {
  return "{\"name\": \"" + std::string(function) + "\", \"" + arguments_key + "\": ";
}

ToolCallSyntax tool_call_syntax(TemplateFamily family) {
  ToolCallSyntax syntax;
  switch (family) {
    case TemplateFamily::kLlama3:
      syntax.arguments_key = "parameters";
      syntax.parallel = false;
      break;
    case TemplateFamily::kMistral:
      syntax.list_open = "[TOOL_CALLS]";
      syntax.separator = ", ";
      break;
    case TemplateFamily::kLfm2:
      // LFM2's JSON call form (its other, Pythonic form f(a=1) is not parsed).
      syntax.list_open = "<|tool_call_start|>";
      syntax.separator = ", ";
      break;
    default:  // chatml and every family without a convention of its own: Hermes
      syntax.open = "<tool_call>\n";
      syntax.close = "\n</tool_call>";
      syntax.separator = "\n";
      break;
  }
  return syntax;
}

ParsedReply parse_tool_calls(std::string_view text, const ToolCallSyntax& syntax) {
  const ReplyScan scan = scan_reply(text, syntax, /*at_end=*/true);
  ParsedReply reply;
  size_t content_end = scan.content_end;
  for (const CallScan& call : scan.calls) {
    if (!call.done && !(call.arguments_done && syntax.list_open.size() > 0)) break;
    reply.calls.push_back(ParsedToolCall{
        call.name,
        std::string(text.substr(call.arguments_begin, call.arguments_end - call.arguments_begin))});
  }
  const bool all_parsed = !scan.calls_broken && reply.calls.size() == scan.calls.size() &&
                          !(scan.calls.empty() && content_end < text.size());
  if (!all_parsed || reply.calls.empty()) {
    reply.calls.clear();
    content_end = text.size();
  }
  reply.content.assign(text.substr(0, content_end));
  return reply;
}

ToolCallStream::ToolCallStream(ToolCallSyntax syntax) : syntax_(std::move(syntax)) {}

ToolCallStream::Delta ToolCallStream::push(std::string_view text) {
  reply_.append(text);
  return step(false);
}

ToolCallStream::Delta ToolCallStream::finish() { return step(true); }

ToolCallStream::Delta ToolCallStream::step(bool at_end) {
  Delta delta;
  const ReplyScan scan = scan_reply(reply_, syntax_, at_end);
  if (scan.calls_broken && !in_call_) {
    // Not a call after all: everything is content.
    delta.content = reply_.substr(emitted_);
    emitted_ = reply_.size();
    return delta;
  }
  if (!in_call_) {
    if (scan.content_end > emitted_) {
      delta.content = reply_.substr(emitted_, scan.content_end - emitted_);
      emitted_ = scan.content_end;
    }
    if (scan.calls.empty() && at_end && emitted_ < reply_.size()) {
      delta.content += reply_.substr(emitted_);
      emitted_ = reply_.size();
    }
  }
  // Calls: a name once, then argument text as it grows.
  for (size_t i = 0; i < scan.calls.size(); ++i) {
    const CallScan& call = scan.calls[i];
    if (!call.named) break;
    Delta::Call out;
    out.index = i;
    if (i >= sent_.size()) {
      in_call_ = true;
      sent_.push_back(0);
      out.first = true;
      out.name = call.name;
    }
    if (call.arguments_begin != 0) {
      const size_t available = call.arguments_end - call.arguments_begin;
      if (available > sent_[i]) {
        out.arguments = reply_.substr(call.arguments_begin + sent_[i], available - sent_[i]);
        sent_[i] = available;
      }
    }
    if (out.first || !out.arguments.empty()) delta.calls.push_back(std::move(out));
  }
  return delta;
}

}  // namespace synapse::chat
