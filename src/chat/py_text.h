// SPDX-License-Identifier: Apache-2.0
// Python's text conventions that templates' output depends on: float repr, string repr, the
// JSON of json.dumps (what Hugging Face's `tojson` filter calls), str.isspace, code-point
// indexing of UTF-8 strings. Strings are UTF-8; case mapping is ASCII-only (see README).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/value.h"

namespace synapse::chat {

// repr(float): shortest round-trip digits, "1.0", "1e+16", "1e-05", "nan", "inf".
std::string py_float_repr(double value);
// repr(str): single quotes unless the text holds ' and no ", escapes as Python does.
std::string py_string_repr(std::string_view text);

// Options of json.dumps as HF's tojson passes them (ensure_ascii=False by default).
struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;          // nullopt: one line; else the indent unit
  std::optional<std::string> item_separator;  // default ", " (one line) or "," (indented)
  std::optional<std::string> key_separator;   // default ": "
  bool sort_keys = false;
};
// json.dumps(value): fails (template_error) on values JSON cannot hold (undefined, callables).
Result<std::string> py_json_dumps(const Value& value, const JsonDumpOptions& options,
                                  size_t max_bytes);

// Python's str.isspace() for one code point.
bool py_is_space(uint32_t code_point);

// Decodes the code point at `pos` and advances past it. Meant for valid UTF-8 (templates and
// request strings are validated first); a stray byte decodes as itself, one byte long.
uint32_t utf8_decode(std::string_view text, size_t& pos);
// Code points of valid UTF-8 text (templates and request strings are validated before use).
std::vector<uint32_t> utf8_code_points(std::string_view text);
void append_utf8(std::string& out, uint32_t code_point);
size_t utf8_length(std::string_view text);  // number of code points
// Byte offsets of each code point's start, plus text.size() at the end.
std::vector<size_t> utf8_offsets(std::string_view text);

// str.strip/lstrip/rstrip: `chars` nullopt strips whitespace, else any of those code points.
enum class StripSide { kBoth, kLeft, kRight };
std::string py_strip(std::string_view text, const std::optional<std::string>& chars,
                     StripSide side);
// str.split(sep, maxsplit) / str.split() (sep nullopt: runs of whitespace, no empty parts).
// An empty separator is an error in Python; the caller checks.
std::vector<std::string> py_split(std::string_view text, const std::optional<std::string>& sep,
                                  int64_t max_split);
std::vector<std::string> py_rsplit(std::string_view text, const std::optional<std::string>& sep,
                                   int64_t max_split);
// str.splitlines() (no keepends): \n, \r, \r\n, \v, \f, \x1c-\x1e, \x85, \u2028, \u2029.
std::vector<std::string> py_splitlines(std::string_view text);
// str.replace(old, new, count); count < 0 replaces all. Empty `old` inserts between code points.
std::string py_replace(std::string_view text, std::string_view from, std::string_view to,
                       int64_t count);

std::string ascii_lower(std::string_view text);
std::string ascii_upper(std::string_view text);
std::string py_title(std::string_view text);       // ASCII letters; others separate words
std::string py_capitalize(std::string_view text);  // first upper, rest lower

}  // namespace synapse::chat
