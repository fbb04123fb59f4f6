// SPDX-License-Identifier: Apache-2.0
// GBNF, llama.cpp's grammar format, compiled to a Grammar: the `grammar` a request may bring.
//
// The language is llama.cpp's: rules `name ::= alternatives` (names of letters, digits, `-` and
// `_`), `|`, sequences, `( )`, string literals and character classes (`[a-z]`, `[^"\\]`) with the
// escapes \n \r \t \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH, `.` (any character), `*` `+` `?`
// `{m}` `{m,}` `{m,n}`, `#` comments, and `root` as the start symbol. A rule ends at the end of
// its line, except that newlines are allowed inside parentheses and after `|`. Terminals are
// Unicode code points matched as UTF-8, and a rule defined twice keeps its last definition.
// Differences, none of which makes a language looser: repetition counts are exact
// up to 10^9, at a cost in rules logarithmic in them (llama.cpp copies the item per count, refuses
// minimums over 2000 and turns maximums over 2000 into "unbounded"); left recursion, which
// llama.cpp refuses, is fine for the Earley parser; invalid UTF-8, a reversed range `[z-a]`,
// `{m,n}` with n < m and characters outside Unicode are errors rather than rules that match
// nothing. Token references (`<think>`, `<[id]>`, `!<...>`) match tokens rather than text and are
// refused with unsupported_schema.
//
// Every terminal is a one-character lexeme (a literal "abc" is three lexemes): the lexer is
// greedy, and a lexeme of one code point can never be extended, so greediness cannot change the
// language of a character-level grammar.
#pragma once

#include <chrono>
#include <cstddef>
#include <string_view>

#include "base/status.h"
#include "constrain/grammar.h"

namespace synapse::constrain {

struct GbnfOptions {
  // Bounds: over any, compiling fails with schema_too_complex.
  std::chrono::milliseconds time_limit{2000};
  size_t max_rules = 100000;  // rules of the compiled grammar, generated ones included
  size_t max_nesting = 256;   // parentheses inside each other (the parser recurses per level)
};

// Malformed text is invalid_grammar with "line L, column C" (columns count characters) in the
// message; so is a reference to an undefined rule (naming it) and a grammar without `root`.
Result<Grammar> compile_gbnf(std::string_view text, const GbnfOptions& options = {});

}  // namespace synapse::constrain
