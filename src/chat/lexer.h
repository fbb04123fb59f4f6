// SPDX-License-Identifier: Apache-2.0
// Splits a Jinja template into text and tag tokens the way Jinja's lexer does with Hugging
// Face's settings: trim_blocks and lstrip_blocks on, `-`/`+` whitespace control, comments
// dropped, raw blocks kept as text, one trailing newline removed, newlines normalized to \n.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace synapse::chat {

enum class TokenKind : uint8_t {
  kText,           // template data, already whitespace-controlled
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,
  kString,  // text holds the decoded literal
  kInteger,
  kFloat,
  kOperator,  // text holds the operator: + - * / // % ** ~ == != < <= > >= = . , : | ( ) [ ] { }
  kEnd,
};

struct SourcePos {
  uint32_t line = 1;
  uint32_t column = 1;  // bytes, 1-based
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0.0;
  SourcePos pos;
};

// "line 3, column 14"
std::string describe(SourcePos pos);

// Fails with template_syntax (naming line and column) on an unterminated tag, comment or string,
// unbalanced brackets, a character no token starts with, or invalid UTF-8.
Result<std::vector<Token>> tokenize_template(std::string_view source);

}  // namespace synapse::chat
