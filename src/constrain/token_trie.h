// SPDX-License-Identifier: Apache-2.0
// A model's vocabulary as the byte strings its tokens stand for, in a trie laid out flat in
// depth-first order: a node's subtree is the range [node, subtree_end), so a walk that finds a
// prefix impossible skips the whole subtree with one assignment.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "constrain/state_mask_cache.h"
#include "tokenizer/tokenizer.h"

namespace synapse::constrain {

using tokenizer::TokenId;

// Text as most of a vocabulary writes it inside a JSON string: well-formed UTF-8 (RFC 3629)
// without `"`, `\` or control characters, read by an 8-state automaton (kBoundary between
// characters, the others inside a multi-byte one). Where a lexer state stays alive on every
// such text (a JSON string's body), the masker takes a trie subtree whole when every path below
// it is such text, instead of walking the tens of thousands of non-ASCII tokens one by one.
struct PlainText {
  static constexpr int kStates = 8;
  static constexpr int kBoundary = 0;
  // The state after `byte`, or -1 when the byte cannot come there.
  static int next(int state, uint8_t byte);
};

class TokenTrie {
 public:
  struct Node {
    uint32_t subtree_end = 0;   // index one past this node's last descendant
    uint32_t tokens_begin = 0;  // into token_ids(): tokens whose bytes end at this node
    uint16_t tokens_count = 0;
    uint16_t depth = 0;  // bytes from the root; the root is 0
    uint8_t byte = 0;    // the byte leading here from the parent
  };

  // Every token with a non-empty byte string except control tokens (those never appear in
  // constrained text). `end_tokens` are the ids that end generation: the masker allows them
  // exactly when the grammar accepts.
  static TokenTrie from_tokenizer(const tokenizer::Tokenizer& tokenizer,
                                  std::vector<TokenId> end_tokens);

  size_t vocab_size() const { return vocab_size_; }
  std::span<const Node> nodes() const { return nodes_; }
  std::span<const TokenId> token_ids() const { return token_ids_; }
  std::span<const TokenId> end_tokens() const { return end_tokens_; }
  const std::string& token_bytes(TokenId id) const { return bytes_[static_cast<size_t>(id)]; }
  // False for tokens the trie leaves out (control tokens, empty ones).
  bool in_trie(TokenId id) const { return in_trie_[static_cast<size_t>(id)] != 0; }
  size_t max_depth() const { return max_depth_; }
  uint32_t parent(uint32_t node) const { return parent_[node]; }
  // The depth of the deepest node in `node`'s subtree.
  uint16_t height(uint32_t node) const { return height_[node]; }
  // The bytes from the root to `node`.
  std::string path(uint32_t node) const;
  // Masks shared by every grammar over this vocabulary (state_mask_cache.h).
  StateMaskCache& shared_masks() const { return *shared_masks_; }
  // The bytes on the edges strictly below `node` (a 256-bit set).
  const std::array<uint64_t, 4>& bytes_below(uint32_t node) const { return below_[node]; }
  // Bit u is set when every path strictly below `node`, read from PlainText state u, stays
  // plain text (see PlainText).
  uint8_t plain_text_below(uint32_t node) const { return plain_below_[node]; }
  // The tokens of `node`'s whole subtree, itself included: token_ids()[begin, end).
  uint32_t subtree_tokens_end(uint32_t node) const {
    const uint32_t end = nodes_[node].subtree_end;
    return end < nodes_.size() ? nodes_[end].tokens_begin
                               : static_cast<uint32_t>(token_ids_.size());
  }

 private:
  size_t vocab_size_ = 0;
  std::vector<Node> nodes_;
  std::vector<TokenId> token_ids_;
  std::vector<TokenId> end_tokens_;
  std::vector<std::string> bytes_;
  std::vector<uint8_t> in_trie_;
  size_t max_depth_ = 0;
  std::vector<std::array<uint64_t, 4>> below_;
  std::vector<uint32_t> parent_;
  std::vector<uint16_t> height_;
  std::vector<uint8_t> plain_below_;
  std::shared_ptr<StateMaskCache> shared_masks_ = std::make_shared<StateMaskCache>();
};

}  // namespace synapse::constrain
