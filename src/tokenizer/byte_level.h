// SPDX-License-Identifier: Apache-2.0
// GPT-2's byte-level alphabet: every byte is written as one printable code point, so that a
// byte-level BPE vocabulary stores arbitrary bytes as text (space is "Ġ", newline "Ċ").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace synapse::tokenizer {

// The code point that stands for `byte`.
char32_t byte_to_codepoint(uint8_t byte);
// The byte a code point stands for, or nullopt when it is not in the alphabet.
std::optional<uint8_t> codepoint_to_byte(char32_t codepoint);

// Token text in the alphabet -> the raw bytes; nullopt when some character is outside it.
std::optional<std::string> byte_level_decode(std::string_view text);
// Raw bytes -> token text in the alphabet.
std::string byte_level_encode(std::string_view bytes);

}  // namespace synapse::tokenizer
