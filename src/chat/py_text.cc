// SPDX-License-Identifier: Apache-2.0
#include "chat/py_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>

namespace synapse::chat {
namespace {

// Decodes one code point of valid UTF-8 at `pos`, advancing it. Invalid bytes (which validated
// input never has) decode as themselves, one byte each, so nothing here can loop forever.
uint32_t decode_at(std::string_view text, size_t& pos) {
  const auto b0 = static_cast<uint8_t>(text[pos]);
  size_t length = 1;
  uint32_t cp = b0;
  if (b0 >= 0xF0) {
    length = 4;
    cp = b0 & 0x07u;
  } else if (b0 >= 0xE0) {
    length = 3;
    cp = b0 & 0x0Fu;
  } else if (b0 >= 0xC0) {
    length = 2;
    cp = b0 & 0x1Fu;
  }
  if (length == 1 || pos + length > text.size()) {
    ++pos;
    return b0;
  }
  for (size_t i = 1; i < length; ++i) {
    cp = (cp << 6) | (static_cast<uint8_t>(text[pos + i]) & 0x3Fu);
  }
  pos += length;
  return cp;
}

void append_json_string(std::string& out, std::string_view text, bool ensure_ascii) {
  out += '"';
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    const uint32_t cp = decode_at(text, pos);
    switch (cp) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    char buf[16];
    if (cp < 0x20 || (ensure_ascii && cp > 0x7E)) {  // json.dumps escapes DEL too
      if (cp >= 0x10000) {  // a surrogate pair, as json.dumps writes astral code points
        const uint32_t v = cp - 0x10000;
        (void)std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (v >> 10),
                            0xDC00 + (v & 0x3FF));
      } else {
        (void)std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      }
      out += buf;
    } else {
      out.append(text.substr(start, pos - start));
    }
  }
  out += '"';
}

class JsonWriter {
 public:
  JsonWriter(const JsonDumpOptions& options, size_t max_bytes)
      : options_(options), max_bytes_(max_bytes) {
    item_separator_ = options.item_separator.value_or(options.indent ? "," : ", ");
    key_separator_ = options.key_separator.value_or(": ");
  }

  Status write(const Value& value, int depth) {
    if (out_.size() > max_bytes_) {
      return Status(ErrorCode::kLimitExceeded, "tojson output exceeds the template's size limit");
    }
    if (depth > kMaxDepth) {
      return Status(ErrorCode::kLimitExceeded, "tojson: value nested too deeply");
    }
    switch (value.kind()) {
      case Value::Kind::kNone:
        out_ += "null";
        return ok_status();
      case Value::Kind::kBool:
        out_ += value.as_bool() ? "true" : "false";
        return ok_status();
      case Value::Kind::kInt:
        out_ += std::to_string(value.as_int());
        return ok_status();
      case Value::Kind::kFloat:
        write_float(value.as_double());
        return ok_status();
      case Value::Kind::kString:
        append_json_string(out_, value.as_string(), options_.ensure_ascii);
        return ok_status();
      case Value::Kind::kList:
        return write_list(value.as_list(), depth);
      case Value::Kind::kDict:
        return write_dict(value.as_dict(), depth);
      default:
        return Status(
            ErrorCode::kTemplateError,
            "Object of type " + std::string(value.type_name()) + " is not JSON serializable");
    }
  }

  std::string take() { return std::move(out_); }

 private:
  static constexpr int kMaxDepth = 128;

  void write_float(double v) {
    if (std::isnan(v)) {
      out_ += "NaN";
    } else if (std::isinf(v)) {
      out_ += v > 0 ? "Infinity" : "-Infinity";
    } else {
      out_ += py_float_repr(v);
    }
  }

  void newline(int depth) {
    if (!options_.indent) return;
    out_ += '\n';
    for (int i = 0; i < depth; ++i) out_ += *options_.indent;
  }

  Status write_list(const ValueList& list, int depth) {
    if (list.items.empty()) {
      out_ += "[]";
      return ok_status();
    }
    out_ += '[';
    for (size_t i = 0; i < list.items.size(); ++i) {
      if (i > 0) out_ += item_separator_;
      newline(depth + 1);
      SYN_RETURN_IF_ERROR(write(list.items[i], depth + 1));
    }
    newline(depth);
    out_ += ']';
    return ok_status();
  }

  Status write_dict(const ValueDict& dict, int depth) {
    if (dict.items.empty()) {
      out_ += "{}";
      return ok_status();
    }
    std::vector<const std::pair<std::string, Value>*> entries;
    entries.reserve(dict.items.size());
    for (const auto& entry : dict.items) entries.push_back(&entry);
    if (options_.sort_keys) {
      std::stable_sort(entries.begin(), entries.end(),
                       [](const auto* a, const auto* b) { return a->first < b->first; });
    }
    out_ += '{';
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i > 0) out_ += item_separator_;
      newline(depth + 1);
      append_json_string(out_, entries[i]->first, options_.ensure_ascii);
      out_ += key_separator_;
      SYN_RETURN_IF_ERROR(write(entries[i]->second, depth + 1));
    }
    newline(depth);
    out_ += '}';
    return ok_status();
  }

  const JsonDumpOptions& options_;
  size_t max_bytes_;
  std::string item_separator_;
  std::string key_separator_;
  std::string out_;
};

bool is_line_break(uint32_t cp) {
  return cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) ||
         cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

bool is_ascii_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

std::string py_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, then Python's layout: positional when the decimal exponent is
  // in (-4, 16], scientific with a two-digit exponent otherwise.
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(result.ptr - buf));
  std::string out;
  if (!sci.empty() && sci[0] == '-') {
    out += '-';
    sci.remove_prefix(1);
  }
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos)) {
    if (c != '.') digits += c;
  }
  int exponent = 0;
  const std::string_view exp_text = sci.substr(e_pos + 1);
  std::from_chars(exp_text.data() + (exp_text[0] == '+' ? 1 : 0), exp_text.data() + exp_text.size(),
                  exponent);
  const int decimal_point = exponent + 1;
  const int n_digits = static_cast<int>(digits.size());
  if (decimal_point > -4 && decimal_point <= 16) {
    if (decimal_point <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decimal_point), '0');
      out += digits;
    } else if (decimal_point >= n_digits) {
      out += digits;
      out.append(static_cast<size_t>(decimal_point - n_digits), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decimal_point));
      out += '.';
      out += digits.substr(static_cast<size_t>(decimal_point));
    }
    return out;
  }
  out += digits[0];
  if (n_digits > 1) {
    out += '.';
    out += digits.substr(1);
  }
  char exp_buf[16];
  (void)std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+',
                      std::abs(exponent));
  out += exp_buf;
  return out;
}

std::string py_string_repr(std::string_view text) {
  const bool has_single = text.find('\'') != std::string_view::npos;
  const bool has_double = text.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    const uint32_t cp = decode_at(text, pos);
    char buf[16];
    if (cp == static_cast<uint32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0)) {
      (void)std::snprintf(buf, sizeof(buf), "\\x%02x", cp);
      out += buf;
    } else {
      out.append(text.substr(start, pos - start));
    }
  }
  out += quote;
  return out;
}

Result<std::string> py_json_dumps(const Value& value, const JsonDumpOptions& options,
                                  size_t max_bytes) {
  JsonWriter writer(options, max_bytes);
  SYN_RETURN_IF_ERROR(writer.write(value, 0));
  return writer.take();
}

bool py_is_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

uint32_t utf8_decode(std::string_view text, size_t& pos) { return decode_at(text, pos); }

std::vector<uint32_t> utf8_code_points(std::string_view text) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) out.push_back(decode_at(text, pos));
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

size_t utf8_length(std::string_view text) {
  size_t count = 0;
  for (char c : text) {
    if ((static_cast<uint8_t>(c) & 0xC0) != 0x80) ++count;
  }
  return count;
}

std::vector<size_t> utf8_offsets(std::string_view text) {
  std::vector<size_t> offsets;
  size_t pos = 0;
  while (pos < text.size()) {
    offsets.push_back(pos);
    decode_at(text, pos);
  }
  offsets.push_back(text.size());
  return offsets;
}

std::string py_strip(std::string_view text, const std::optional<std::string>& chars,
                     StripSide side) {
  const std::vector<uint32_t> strip_set =
      chars ? utf8_code_points(*chars) : std::vector<uint32_t>{};
  auto strips = [&](uint32_t cp) {
    if (!chars) return py_is_space(cp);
    return std::find(strip_set.begin(), strip_set.end(), cp) != strip_set.end();
  };
  const std::vector<size_t> offsets = utf8_offsets(text);
  size_t first = 0;
  size_t last = offsets.size() - 1;  // index one past the last code point
  if (side != StripSide::kRight) {
    while (first < last) {
      size_t pos = offsets[first];
      if (!strips(decode_at(text, pos))) break;
      ++first;
    }
  }
  if (side != StripSide::kLeft) {
    while (last > first) {
      size_t pos = offsets[last - 1];
      if (!strips(decode_at(text, pos))) break;
      --last;
    }
  }
  return std::string(text.substr(offsets[first], offsets[last] - offsets[first]));
}

std::vector<std::string> py_split(std::string_view text, const std::optional<std::string>& sep,
                                  int64_t max_split) {
  std::vector<std::string> parts;
  if (sep) {
    size_t start = 0;
    while (max_split < 0 || static_cast<int64_t>(parts.size()) < max_split) {
      const size_t hit = text.find(*sep, start);
      if (hit == std::string_view::npos) break;
      parts.emplace_back(text.substr(start, hit - start));
      start = hit + sep->size();
    }
    parts.emplace_back(text.substr(start));
    return parts;
  }
  size_t pos = 0;
  while (pos < text.size()) {
    // Skip white space, then take a word (or, once max_split is reached, the rest as it is).
    size_t next = pos;
    while (pos < text.size()) {
      next = pos;
      if (!py_is_space(decode_at(text, next))) break;
      pos = next;
    }
    if (pos >= text.size()) break;
    if (max_split >= 0 && static_cast<int64_t>(parts.size()) >= max_split) {
      parts.emplace_back(text.substr(pos));
      break;
    }
    const size_t start = pos;
    while (pos < text.size()) {
      next = pos;
      if (py_is_space(decode_at(text, next))) break;
      pos = next;
    }
    parts.emplace_back(text.substr(start, pos - start));
  }
  return parts;
}

std::vector<std::string> py_rsplit(std::string_view text, const std::optional<std::string>& sep,
                                   int64_t max_split) {
  if (max_split < 0) return py_split(text, sep, max_split);
  std::vector<std::string> parts;
  if (sep) {
    size_t end = text.size();
    while (static_cast<int64_t>(parts.size()) < max_split) {
      if (end < sep->size()) break;
      const size_t hit = text.rfind(*sep, end - sep->size());
      if (hit == std::string_view::npos) break;
      parts.emplace_back(text.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    parts.emplace_back(text.substr(0, end));
    std::reverse(parts.begin(), parts.end());
    return parts;
  }
  // White space, from the right: the remainder keeps its leading white space.
  const std::vector<size_t> offsets = utf8_offsets(text);
  auto space_at = [&](size_t index) {
    size_t pos = offsets[index];
    return py_is_space(decode_at(text, pos));
  };
  size_t end = offsets.size() - 1;  // code-point index one past the current word
  while (true) {
    while (end > 0 && space_at(end - 1)) --end;
    if (end == 0) break;
    if (static_cast<int64_t>(parts.size()) >= max_split) {
      parts.emplace_back(text.substr(0, offsets[end]));
      break;
    }
    size_t start = end;
    while (start > 0 && !space_at(start - 1)) --start;
    parts.emplace_back(text.substr(offsets[start], offsets[end] - offsets[start]));
    end = start;
  }
  std::reverse(parts.begin(), parts.end());
  return parts;
}

std::vector<std::string> py_splitlines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t at = pos;
    const uint32_t cp = decode_at(text, pos);
    if (!is_line_break(cp)) continue;
    lines.emplace_back(text.substr(start, at - start));
    if (cp == '\r' && pos < text.size() && text[pos] == '\n') ++pos;
    start = pos;
  }
  if (start < text.size()) lines.emplace_back(text.substr(start));
  return lines;
}

std::string py_replace(std::string_view text, std::string_view from, std::string_view to,
                       int64_t count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` before every code point and at the end.
    const std::vector<size_t> offsets = utf8_offsets(text);
    int64_t done = 0;
    for (size_t i = 0; i + 1 < offsets.size(); ++i) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      out += text.substr(offsets[i], offsets[i + 1] - offsets[i]);
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t hit = text.find(from, start);
    if (hit == std::string_view::npos) break;
    out += text.substr(start, hit - start);
    out += to;
    start = hit + from.size();
    ++done;
  }
  out += text.substr(start);
  return out;
}

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string ascii_upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

std::string py_title(std::string_view text) {
  std::string out(text);
  bool previous_cased = false;
  for (char& c : out) {
    if (is_ascii_alpha(c)) {
      c = previous_cased ? ascii_lower(std::string_view(&c, 1))[0]
                         : ascii_upper(std::string_view(&c, 1))[0];
      previous_cased = true;
    } else {
      previous_cased = false;
    }
  }
  return out;
}

std::string py_capitalize(std::string_view text) {
  std::string out = ascii_lower(text);
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
  return out;
}

}  // namespace synapse::chat
