// SPDX-License-Identifier: Apache-2.0
#include "chat/lexer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>

#include "base/utf8.h"
#include "chat/py_text.h"

namespace synapse::chat {
namespace {

// Longest first, so that "//" wins over "/" and "**" over "*".
constexpr std::array<std::string_view, 25> kOperators = {
    "//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<",
    ">",  "=",  ".",  ",",  ":",  "|",  "(", ")", "[", "]", "{", "}",
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
// White space as Python's \s sees it (ASCII part; tags written with other spaces are errors).
bool is_tag_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  Result<std::vector<Token>> run() {
    size_t pos = 0;
    bool line_starting = true;  // the last match ended a line (Jinja's lstrip rule needs it)
    while (pos < src_.size()) {
      const size_t tag = find_tag(pos);
      if (tag == std::string::npos) {
        emit_text(src_.substr(pos), pos);
        break;
      }
      const char kind = src_[tag + 1];
      const char modifier = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      const bool has_modifier = modifier == '-' || modifier == '+';
      std::string text = src_.substr(pos, tag - pos);
      if (modifier == '-') {
        text = py_strip(text, std::nullopt, StripSide::kRight);
      } else if (modifier != '+' && kind != '{') {
        // lstrip_blocks: white space between the line's start and a block or comment tag.
        const size_t line_pos = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if ((line_pos > 0 || line_starting) && line_pos < text.size() &&
            std::all_of(text.begin() + static_cast<std::ptrdiff_t>(line_pos), text.end(),
                        [](char c) {
                          return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r';
                        })) {
          text.resize(line_pos);
        }
      }
      emit_text(text, pos);
      const size_t body = tag + 2 + (has_modifier ? 1 : 0);
      size_t end = 0;
      if (kind == '#') {
        SYN_ASSIGN_OR_RETURN(end, skip_comment(tag, body));
      } else if (kind == '%' && raw_begin_end(body) != std::string::npos) {
        SYN_ASSIGN_OR_RETURN(end, raw_block(tag, raw_begin_end(body)));
      } else {
        SYN_ASSIGN_OR_RETURN(end, tag_tokens(tag, body, kind == '%'));
      }
      line_starting = end > 0 && src_[end - 1] == '\n';
      pos = end;
    }
    tokens_.push_back(Token{TokenKind::kEnd, "", 0, 0.0, pos_of(src_.size())});
    return std::move(tokens_);
  }

 private:
  SourcePos pos_of(size_t offset) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const size_t line = static_cast<size_t>(it - line_starts_.begin());
    return SourcePos{static_cast<uint32_t>(line),
                     static_cast<uint32_t>(offset - line_starts_[line - 1] + 1)};
  }

  Status error(size_t offset, const std::string& message) const {
    return Status(ErrorCode::kTemplateSyntax, message + " (" + describe(pos_of(offset)) + ")");
  }

  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) {
        return i;
      }
    }
    return std::string::npos;
  }

  void emit_text(std::string text, size_t offset) {
    if (text.empty()) return;
    tokens_.push_back(Token{TokenKind::kText, std::move(text), 0, 0.0, pos_of(offset)});
  }

  // Python's `\s*` after a `-` end marker: any white space, newlines included.
  size_t skip_space(size_t pos) const {
    while (pos < src_.size()) {
      size_t next = pos;
      if (!py_is_space(utf8_decode(src_, next))) break;
      pos = next;
    }
    return pos;
  }

  // After `%}`: trim_blocks removes one newline.
  size_t after_block_end(size_t pos) const {
    return pos < src_.size() && src_[pos] == '\n' ? pos + 1 : pos;
  }

  Result<size_t> skip_comment(size_t tag, size_t body) {
    const size_t close = src_.find("#}", body);
    if (close == std::string::npos) return error(tag, "comment is not closed ('#}' missing)");
    if (close > body && src_[close - 1] == '-') return skip_space(close + 2);
    if (close > body && src_[close - 1] == '+') return close + 2;
    return after_block_end(close + 2);
  }

  // `{% raw %}` (with optional -/+ markers): the offset after its `%}`, or npos.
  size_t raw_begin_end(size_t body) const {
    size_t p = body;
    while (p < src_.size() && is_tag_space(src_[p])) ++p;
    if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && is_name_char(src_[p + 3]))) {
      return std::string::npos;
    }
    p += 3;
    while (p < src_.size() && is_tag_space(src_[p])) ++p;
    if (src_.compare(p, 3, "-%}") == 0) return skip_space(p + 3);
    if (src_.compare(p, 2, "%}") == 0) return p + 2;  // Jinja does not trim after raw
    return std::string::npos;
  }

  Result<size_t> raw_block(size_t tag, size_t content) {
    for (size_t i = src_.find("{%", content); i != std::string::npos; i = src_.find("{%", i + 1)) {
      size_t p = i + 2;
      const char modifier = p < src_.size() ? src_[p] : '\0';
      if (modifier == '-' || modifier == '+') ++p;
      while (p < src_.size() && is_tag_space(src_[p])) ++p;
      if (src_.compare(p, 6, "endraw") != 0) continue;
      p += 6;
      while (p < src_.size() && is_tag_space(src_[p])) ++p;
      size_t end = 0;
      if (src_.compare(p, 3, "-%}") == 0) {
        end = skip_space(p + 3);
      } else if (src_.compare(p, 3, "+%}") == 0) {
        end = p + 3;
      } else if (src_.compare(p, 2, "%}") == 0) {
        end = after_block_end(p + 2);
      } else {
        continue;
      }
      std::string text = src_.substr(content, i - content);
      if (modifier == '-') text = py_strip(text, std::nullopt, StripSide::kRight);
      emit_text(std::move(text), content);
      return end;
    }
    return error(tag, "raw block is not closed ('{% endraw %}' missing)");
  }

  // The tokens of one {{ ... }} or {% ... %}; returns the offset after its end marker.
  Result<size_t> tag_tokens(size_t tag, size_t body, bool block) {
    tokens_.push_back(
        Token{block ? TokenKind::kBlockBegin : TokenKind::kVariableBegin, "", 0, 0.0, pos_of(tag)});
    std::vector<char> brackets;
    size_t p = body;
    while (true) {
      if (brackets.empty()) {
        const std::string_view close = block ? "%}" : "}}";
        size_t end = std::string::npos;
        if (src_.compare(p, 1, "-") == 0 && src_.compare(p + 1, 2, close) == 0) {
          end = skip_space(p + 3);
        } else if (block && src_.compare(p, 3, "+%}") == 0) {
          end = p + 3;
        } else if (src_.compare(p, 2, close) == 0) {
          end = block ? after_block_end(p + 2) : p + 2;
        }
        if (end != std::string::npos) {
          tokens_.push_back(
              Token{block ? TokenKind::kBlockEnd : TokenKind::kVariableEnd, "", 0, 0.0, pos_of(p)});
          return end;
        }
      }
      if (p >= src_.size()) {
        return error(tag, block ? "block tag is not closed ('%}' missing)"
                                : "expression is not closed ('}}' missing)");
      }
      const char c = src_[p];
      if (is_tag_space(c)) {
        ++p;
        continue;
      }
      Token token;
      token.pos = pos_of(p);
      if (is_digit(c)) {
        SYN_ASSIGN_OR_RETURN(p, number(p, token));
      } else if (is_name_start(c)) {
        const size_t start = p;
        while (p < src_.size() && is_name_char(src_[p])) ++p;
        token.kind = TokenKind::kName;
        token.text = src_.substr(start, p - start);
      } else if (c == '\'' || c == '"') {
        SYN_ASSIGN_OR_RETURN(p, string_literal(p, token));
      } else {
        const auto op = std::find_if(kOperators.begin(), kOperators.end(), [&](std::string_view o) {
          return src_.compare(p, o.size(), o) == 0;
        });
        if (op == kOperators.end()) {
          return error(p, "unexpected character '" + std::string(1, c) + "' in a tag");
        }
        token.kind = TokenKind::kOperator;
        token.text = std::string(*op);
        SYN_RETURN_IF_ERROR(balance(brackets, token.text, p));
        p += op->size();
      }
      tokens_.push_back(std::move(token));
    }
  }

  Status balance(std::vector<char>& brackets, const std::string& op, size_t offset) const {
    if (op == "(" || op == "[" || op == "{") {
      brackets.push_back(op[0]);
      return ok_status();
    }
    if (op != ")" && op != "]" && op != "}") return ok_status();
    const char open = op == ")" ? '(' : op == "]" ? '[' : '{';
    if (brackets.empty() || brackets.back() != open) {
      return error(offset, "unexpected '" + op + "'");
    }
    brackets.pop_back();
    return ok_status();
  }

  // Digits with optional '_' separators.
  size_t digits(size_t p) const {
    while (p < src_.size() && (is_digit(src_[p]) ||
                               (src_[p] == '_' && p + 1 < src_.size() && is_digit(src_[p + 1])))) {
      ++p;
    }
    return p;
  }

  Result<size_t> number(size_t start, Token& token) const {
    auto clean = [](std::string_view text) {
      std::string out;
      for (char c : text) {
        if (c != '_') out += c;
      }
      return out;
    };
    if (src_[start] == '0' && start + 2 < src_.size() &&
        (src_[start + 1] == 'x' || src_[start + 1] == 'X' || src_[start + 1] == 'o' ||
         src_[start + 1] == 'O' || src_[start + 1] == 'b' || src_[start + 1] == 'B')) {
      const int base = src_[start + 1] == 'x' || src_[start + 1] == 'X'   ? 16
                       : src_[start + 1] == 'o' || src_[start + 1] == 'O' ? 8
                                                                          : 2;
      size_t p = start + 2;
      while (p < src_.size() && (is_hex(src_[p]) || src_[p] == '_')) ++p;
      const std::string text = clean(std::string_view(src_).substr(start + 2, p - start - 2));
      char* parse_end = nullptr;
      errno = 0;
      const unsigned long long value = std::strtoull(text.c_str(), &parse_end, base);
      if (text.empty() || *parse_end != '\0' || errno != 0 || value > INT64_MAX) {
        return error(start, "invalid integer literal");
      }
      token.kind = TokenKind::kInteger;
      token.int_value = static_cast<int64_t>(value);
      return p;
    }
    size_t p = digits(start);
    bool is_float = false;
    // A fraction needs a digit after the dot (so `1.` is the integer 1 then `.`), and a number
    // right after a `.` is an attribute index (`a.0.1`), never a float.
    const bool after_dot = start > 0 && src_[start - 1] == '.';
    if (!after_dot && p + 1 < src_.size() && src_[p] == '.' && is_digit(src_[p + 1])) {
      p = digits(p + 1);
      is_float = true;
    }
    if (!after_dot && p < src_.size() && (src_[p] == 'e' || src_[p] == 'E')) {
      size_t q = p + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && is_digit(src_[q])) {
        p = digits(q);
        is_float = true;
      }
    }
    const std::string text = clean(std::string_view(src_).substr(start, p - start));
    if (is_float) {
      token.kind = TokenKind::kFloat;
      token.float_value = std::strtod(text.c_str(), nullptr);
      return p;
    }
    errno = 0;
    const unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
    if (errno != 0 || value > INT64_MAX) return error(start, "integer literal too large");
    token.kind = TokenKind::kInteger;
    token.int_value = static_cast<int64_t>(value);
    return p;
  }

  // A quoted literal with Python's escapes (Jinja decodes them with unicode-escape).
  Result<size_t> string_literal(size_t start, Token& token) const {
    const char quote = src_[start];
    std::string out;
    size_t p = start + 1;
    while (true) {
      if (p >= src_.size()) return error(start, "string literal is not closed");
      const char c = src_[p];
      if (c == quote) break;
      if (c != '\\') {
        out += c;
        ++p;
        continue;
      }
      if (p + 1 >= src_.size()) return error(start, "string literal is not closed");
      const char e = src_[p + 1];
      p += 2;
      switch (e) {
        case '\n':
          break;  // line continuation
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'v':
          out += '\v';
          break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (p + n > src_.size() ||
              !std::all_of(src_.begin() + static_cast<std::ptrdiff_t>(p),
                           src_.begin() + static_cast<std::ptrdiff_t>(p + n), is_hex)) {
            return error(p - 2, "invalid \\" + std::string(1, e) + " escape in a string literal");
          }
          const auto cp =
              static_cast<uint32_t>(std::strtoul(src_.substr(p, n).c_str(), nullptr, 16));
          if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return error(p - 2, "escape outside Unicode scalar values in a string literal");
          }
          append_utf8(out, cp);
          p += n;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {  // up to three octal digits
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int i = 0; i < 2 && p < src_.size() && src_[p] >= '0' && src_[p] <= '7'; ++i) {
              cp = cp * 8 + static_cast<uint32_t>(src_[p++] - '0');
            }
            append_utf8(out, cp);
          } else {  // unknown escapes stay as written
            out += '\\';
            out += e;
          }
      }
    }
    token.kind = TokenKind::kString;
    token.text = std::move(out);
    return p + 1;
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

std::string describe(SourcePos pos) {
  return "line " + std::to_string(pos.line) + ", column " + std::to_string(pos.column);
}

Result<std::vector<Token>> tokenize_template(std::string_view source) {
  if (const auto bad = find_invalid_utf8(source)) {
    return Status(ErrorCode::kTemplateSyntax,
                  "template is not valid UTF-8 at byte " + std::to_string(*bad));
  }
  // Jinja normalizes every newline to \n and drops one trailing newline
  // (keep_trailing_newline=False).
  std::string text;
  text.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      text += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      text += source[i];
    }
  }
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return Lexer(std::move(text)).run();
}

}  // namespace synapse::chat
