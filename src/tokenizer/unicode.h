// SPDX-License-Identifier: Apache-2.0
// Unicode helpers for the tokenizers: strict UTF-8 stepping, and character data (categories,
// normalization, lower-casing) from utf8proc, so no Unicode table is copied by hand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace synapse::tokenizer {

inline constexpr char32_t kInvalidCodepoint = 0xFFFFFFFF;

// Decodes the code point at `text[pos]` strictly (RFC 3629). Returns its length in bytes and
// stores the code point, or returns 1 and stores kInvalidCodepoint for a byte that does not
// start a valid sequence: invalid input advances one byte at a time and is never skipped.
size_t decode_utf8(std::string_view text, size_t pos, char32_t& codepoint);

// Appends the UTF-8 encoding of a valid code point.
void append_utf8(char32_t codepoint, std::string& out);

// Unicode general categories by their first letter, and the properties tokenizers ask about.
bool is_letter(char32_t c);       // L*
bool is_number(char32_t c);       // N*
bool is_punctuation(char32_t c);  // P*
bool is_other(char32_t c);        // C* (control, format, surrogate, private use, unassigned)
// Cc, Cf, Co, Cs: what Hugging Face's BertNormalizer removes as "control". Unassigned code points
// (Cn, e.g. the noncharacters U+FFFF and U+10FFFF) stay and become [UNK], as its corpus shows.
bool is_bert_control(char32_t c);
bool is_nonspacing_mark(char32_t c);  // Mn
// The White_Space property (what Rust's char::is_whitespace and llama.cpp call whitespace).
bool is_white_space(char32_t c);
// Simple (one-to-one) lower-case mapping.
char32_t to_lower(char32_t c);

// Canonical composition / decomposition of valid UTF-8. The caller validates first; returns false
// (leaving `out` unspecified) only if utf8proc refuses the text.
bool nfc(std::string_view text, std::string& out);
bool nfd(std::string_view text, std::string& out);
// True when `text` is certainly unchanged by NFC: no code point at or above U+0300 (the first
// combining mark), so nothing can compose or reorder. A cheap byte scan that lets plain Latin
// text skip normalization.
bool is_trivially_nfc(std::string_view text);

}  // namespace synapse::tokenizer
