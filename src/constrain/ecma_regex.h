// SPDX-License-Identifier: Apache-2.0
// ECMA-262 regular expressions (the dialect JSON Schema's `pattern` uses) and JSON Schema's
// `format` names, compiled to byte regexes over encoded characters.
//
// Characters are encoded one of two ways: as UTF-8 (a grammar's raw text), or as they appear
// inside a JSON string written canonically — `"` as \", `\` as \\, U+0008/09/0A/0C/0D as
// \b \t \n \f \r, other code points below U+0020 as \u00XX (lowercase hex), everything else
// as its UTF-8 bytes. The canonical form is what nlohmann::json and Python's json.dumps
// (ensure_ascii=False) write, so a constrained decoder emits exactly one spelling per string.
#pragma once

#include <span>
#include <string_view>

#include "base/status.h"
#include "constrain/regex.h"

namespace synapse::constrain {

enum class CharEncoding { kUtf8, kJsonString };

// One character from `ranges`, encoded. With kJsonString this is the character's canonical
// escape or its UTF-8 bytes.
RegexId encoded_chars(RegexBuilder& rx, std::span<const CodepointRange> ranges,
                      CharEncoding encoding);
// Any one character (any Unicode scalar value), encoded.
RegexId any_encoded_char(RegexBuilder& rx, CharEncoding encoding);

// Compiles an ECMA-262 pattern. `search` gives JSON Schema's semantics: the pattern matches
// if it matches anywhere in the string (each end is open unless ^ or $ anchors it).
// Unsupported syntax (backreferences, lookaround, ...) is an error with code
// unsupported_schema naming the offset; malformed syntax is invalid_grammar; a repeat count
// over 10000 or groups nested over 200 deep is schema_too_complex.
Result<RegexId> compile_ecma_regex(RegexBuilder& rx, std::string_view pattern,
                                   CharEncoding encoding, bool search);

// The regex of a JSON Schema `format` value (date-time, date, time, email, uuid, uri, ipv4,
// ipv6, hostname, ...); unsupported_schema for names it does not know.
Result<RegexId> format_regex(RegexBuilder& rx, std::string_view format, CharEncoding encoding);

}  // namespace synapse::constrain
