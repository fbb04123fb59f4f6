// SPDX-License-Identifier: Apache-2.0
// A tokenizer vocabulary: each token's text as the model stores it (SentencePiece "▁" form,
// GPT-2 byte-level form, or WordPiece "##" form), its score, its type, and the model-level
// special tokens and switches (BOS/EOS/UNK ids, add_bos, add_space_prefix ...). Owns its data
// (copied out of the GGUF mapping or the tokenizer.json) and is immutable once built.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace synapse::tokenizer {

using TokenId = int32_t;
inline constexpr TokenId kNoToken = -1;

// The values of GGUF's tokenizer.ggml.token_type (llama.cpp's llama_token_type).
enum class TokenType : uint8_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct SpecialTokens {
  TokenId bos = kNoToken;
  TokenId eos = kNoToken;
  TokenId unk = kNoToken;
  TokenId sep = kNoToken;
  TokenId pad = kNoToken;
  TokenId cls = kNoToken;
  TokenId mask = kNoToken;
  bool add_bos = false;  // encode(add_special) starts with BOS (CLS for WordPiece)
  bool add_eos = false;  // encode(add_special) ends with EOS (SEP for WordPiece)
};

// Lets unordered maps keyed by std::string be searched with a string_view, without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class Vocab {
 public:
  struct Token {
    std::string text;
    float score = 0.0f;
    TokenType type = TokenType::kNormal;
    bool lstrip = false;  // as a special token, it swallows white space on its left
    bool rstrip = false;  // ... and on its right
  };

  TokenId add(Token token);  // returns the new id; a repeated text keeps its first id in find()

  size_t size() const { return tokens_.size(); }
  bool contains(TokenId id) const { return id >= 0 && static_cast<size_t>(id) < tokens_.size(); }
  const Token& token(TokenId id) const { return tokens_[static_cast<size_t>(id)]; }
  Token& mutable_token(TokenId id) { return tokens_[static_cast<size_t>(id)]; }
  std::string_view text(TokenId id) const { return token(id).text; }
  TokenType type(TokenId id) const { return token(id).type; }
  TokenId find(std::string_view text) const {
    const auto it = by_text_.find(text);
    return it == by_text_.end() ? kNoToken : it->second;
  }

  SpecialTokens& special() { return special_; }
  const SpecialTokens& special() const { return special_; }

 private:
  std::vector<Token> tokens_;
  std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>> by_text_;
  SpecialTokens special_;
};

}  // namespace synapse::tokenizer
