// SPDX-License-Identifier: Apache-2.0
#include "constrain/token_trie.h"

#include <algorithm>
#include <numeric>

namespace synapse::constrain {

TokenTrie TokenTrie::from_tokenizer(const tokenizer::Tokenizer& tokenizer,
                                    std::vector<TokenId> end_tokens) {
  TokenTrie trie;
  const tokenizer::Vocab& vocab = tokenizer.vocab();
  trie.vocab_size_ = vocab.size();
  trie.bytes_.resize(trie.vocab_size_);
  trie.in_trie_.assign(trie.vocab_size_, 0);
  std::vector<TokenId> order;
  for (size_t i = 0; i < trie.vocab_size_; ++i) {
    const auto id = static_cast<TokenId>(i);
    tokenizer.append_token_bytes(id, tokenizer::DecodeOptions{}, trie.bytes_[i]);
    const tokenizer::TokenType type = vocab.type(id);
    if (type == tokenizer::TokenType::kControl || type == tokenizer::TokenType::kUnused ||
        trie.bytes_[i].empty()) {
      continue;
    }
    trie.in_trie_[i] = 1;
    order.push_back(id);
  }
  // Sorting the byte strings puts every prefix before its extensions, so the trie comes out
  // in depth-first order with one pass and a stack of open nodes, and each node's tokens come
  // before its descendants': token_ids() is filled in node order on the way.
  std::stable_sort(order.begin(), order.end(), [&](TokenId a, TokenId b) {
    return trie.bytes_[static_cast<size_t>(a)] < trie.bytes_[static_cast<size_t>(b)];
  });
  trie.nodes_.push_back(Node{});     // the root
  std::vector<uint32_t> open = {0};  // path from the root to the last node created
  std::string path;                  // bytes of that path
  for (const TokenId id : order) {
    const std::string& bytes = trie.bytes_[static_cast<size_t>(id)];
    size_t common = 0;
    while (common < path.size() && common < bytes.size() && path[common] == bytes[common]) {
      ++common;
    }
    while (path.size() > common) {  // close the nodes past the common prefix
      trie.nodes_[open.back()].subtree_end = static_cast<uint32_t>(trie.nodes_.size());
      open.pop_back();
      path.pop_back();
    }
    for (size_t d = common; d < bytes.size(); ++d) {
      Node node;
      node.byte = static_cast<uint8_t>(bytes[d]);
      node.depth = static_cast<uint16_t>(d + 1);
      node.tokens_begin = static_cast<uint32_t>(trie.token_ids_.size());
      open.push_back(static_cast<uint32_t>(trie.nodes_.size()));
      trie.nodes_.push_back(node);
      path.push_back(bytes[d]);
    }
    trie.token_ids_.push_back(id);
    ++trie.nodes_[open.back()].tokens_count;
    trie.max_depth_ = std::max(trie.max_depth_, bytes.size());
  }
  while (!open.empty()) {
    trie.nodes_[open.back()].subtree_end = static_cast<uint32_t>(trie.nodes_.size());
    open.pop_back();
  }
  // Parents, and the bytes below each node, children before parents (a child's index is
  // above its parent's).
  trie.parent_.assign(trie.nodes_.size(), 0);
  trie.height_.assign(trie.nodes_.size(), 0);
  trie.below_.assign(trie.nodes_.size(), {});
  for (size_t i = trie.nodes_.size(); i-- > 0;) {
    std::array<uint64_t, 4>& below = trie.below_[i];
    trie.height_[i] = trie.nodes_[i].depth;
    for (uint32_t c = static_cast<uint32_t>(i) + 1; c < trie.nodes_[i].subtree_end;
         c = trie.nodes_[c].subtree_end) {
      const uint8_t b = trie.nodes_[c].byte;
      trie.parent_[c] = static_cast<uint32_t>(i);
      trie.height_[i] = std::max(trie.height_[i], trie.height_[c]);
      below[b >> 6] |= uint64_t{1} << (b & 63);
      for (size_t w = 0; w < 4; ++w) below[w] |= trie.below_[c][w];
    }
  }
  // Which PlainText states every path below a node stays in, children first as above.
  trie.plain_below_.assign(trie.nodes_.size(), 0);
  for (size_t i = trie.nodes_.size(); i-- > 0;) {
    uint8_t states = 0xff;
    for (uint32_t c = static_cast<uint32_t>(i) + 1; c < trie.nodes_[i].subtree_end;
         c = trie.nodes_[c].subtree_end) {
      for (int u = 0; u < PlainText::kStates; ++u) {
        const int v = PlainText::next(u, trie.nodes_[c].byte);
        if (v < 0 || ((trie.plain_below_[c] >> v) & 1) == 0) {
          states &= static_cast<uint8_t>(~(1u << u));
        }
      }
    }
    trie.plain_below_[i] = states;
  }
  std::sort(end_tokens.begin(), end_tokens.end());
  end_tokens.erase(std::unique(end_tokens.begin(), end_tokens.end()), end_tokens.end());
  trie.end_tokens_ = std::move(end_tokens);
  return trie;
}

int PlainText::next(int state, uint8_t byte) {
  // States: 0 between characters; 1, 2, 3 continuation bytes left (any of 80-BF); 4 after E0
  // (A0-BF), 5 after ED (80-9F, no surrogates), 6 after F0 (90-BF), 7 after F4 (80-8F).
  const bool continuation = byte >= 0x80 && byte <= 0xbf;
  switch (state) {
    case 0:
      if (byte >= 0x20 && byte < 0x80) return byte == '"' || byte == '\\' ? -1 : 0;
      if (byte >= 0xc2 && byte <= 0xdf) return 1;
      if (byte == 0xe0) return 4;
      if (byte == 0xed) return 5;
      if (byte >= 0xe1 && byte <= 0xef) return 2;
      if (byte == 0xf0) return 6;
      if (byte >= 0xf1 && byte <= 0xf3) return 3;
      if (byte == 0xf4) return 7;
      return -1;
    case 1:
    case 2:
    case 3:
      return continuation ? state - 1 : -1;
    case 4:
      return byte >= 0xa0 && byte <= 0xbf ? 1 : -1;
    case 5:
      return byte >= 0x80 && byte <= 0x9f ? 1 : -1;
    case 6:
      return byte >= 0x90 && byte <= 0xbf ? 2 : -1;
    case 7:
      return byte >= 0x80 && byte <= 0x8f ? 2 : -1;
    default:
      return -1;
  }
}

std::string TokenTrie::path(uint32_t node) const {
  std::string out;
  for (; node != 0; node = parent_[node]) out.push_back(static_cast<char>(nodes_[node].byte));
  return std::string(out.rbegin(), out.rend());
}

}  // namespace synapse::constrain
