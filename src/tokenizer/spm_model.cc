// SPDX-License-Identifier: Apache-2.0
#include "tokenizer/spm_model.h"

#include <algorithm>
#include <bit>
#include <cstdio>

#include "tokenizer/unicode.h"

namespace synapse::tokenizer {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

bool ends_with_space_mark(std::string_view text, size_t end) {
  return end >= kSpace.size() && text.substr(end - kSpace.size(), kSpace.size()) == kSpace;
}

}  // namespace

Result<std::unique_ptr<SpmModel>> SpmModel::create(const Vocab& vocab, bool add_space_prefix) {
  std::unique_ptr<SpmModel> model(new SpmModel(vocab, add_space_prefix));
  model->byte_token_.fill(kNoToken);
  char name[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    model->byte_token_[static_cast<size_t>(b)] = vocab.find(name);
  }
  // Words may be merged separately only if no piece could span a word boundary, i.e. no piece
  // has "▁" right after another character.
  bool separable = true;
  for (TokenId id = 0; separable && static_cast<size_t>(id) < vocab.size(); ++id) {
    const std::string_view text = vocab.text(id);
    for (size_t pos = text.find(kSpace, 1); pos != std::string_view::npos;
         pos = text.find(kSpace, pos + 1)) {
      if (!ends_with_space_mark(text, pos)) {
        separable = false;
        break;
      }
    }
  }
  model->split_words_ = separable;
  return model;
}

TokenId SpmModel::mergeable(std::string_view text) const {
  const TokenId id = vocab_.find(text);
  if (id == kNoToken) return kNoToken;
  const TokenType type = vocab_.type(id);
  return type == TokenType::kNormal || type == TokenType::kUserDefined ? id : kNoToken;
}

void SpmModel::append_piece(TokenId id, std::string& out) const {
  const Vocab::Token& token = vocab_.token(id);
  if (token.type == TokenType::kByte && token.text.size() == 6) {
    // <0xXX>
    unsigned value = 0;
    if (std::sscanf(token.text.c_str(), "<0x%02X>", &value) == 1) {
      out += static_cast<char>(value);
      return;
    }
  }
  const std::string_view text = token.text;
  for (size_t pos = 0; pos < text.size();) {
    if (text.substr(pos, kSpace.size()) == kSpace) {
      out += ' ';
      pos += kSpace.size();
    } else {
      out += text[pos++];
    }
  }
}

void SpmModel::encode(std::string_view text, bool after_special, EncodeScratch& scratch,
                      std::vector<TokenId>& out) const {
  scratch.bind(this);
  std::string& escaped = scratch.text;
  escaped.clear();
  if (add_space_prefix_ && after_special) escaped += kSpace;
  for (const char c : text) {
    if (c == ' ') {
      escaped += kSpace;
    } else {
      escaped += c;
    }
  }
  const std::string_view all = escaped;
  if (!split_words_) {
    merge_word(all, scratch, out);
    return;
  }
  // Cut before every "▁" that follows another character.
  size_t start = 0;
  for (size_t pos = all.find(kSpace, 1); pos != std::string_view::npos;
       pos = all.find(kSpace, pos + kSpace.size())) {
    if (pos > start && !ends_with_space_mark(all, pos)) {
      encode_word(all.substr(start, pos - start), scratch, out);
      start = pos;
    }
  }
  if (start < all.size()) encode_word(all.substr(start), scratch, out);
}

void SpmModel::encode_word(std::string_view word, EncodeScratch& scratch,
                           std::vector<TokenId>& out) const {
  scratch.cache.append(word, out, [&](std::string_view w, std::vector<TokenId>& ids) {
    merge_word(w, scratch, ids);
  });
}

namespace {

// Candidates are ordered by score (higher first), then by left position (lower first). The
// score's bits are mapped to an unsigned key that sorts like the float, then inverted, so one
// integer comparison orders both.
uint64_t candidate(float score, uint32_t left) {
  uint32_t bits = std::bit_cast<uint32_t>(score);
  bits = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);  // ascending with the float
  return (static_cast<uint64_t>(~bits) << 32) | left;
}

}  // namespace

void SpmModel::merge_word(std::string_view word, EncodeScratch& scratch,
                          std::vector<TokenId>& out) const {
  std::vector<MergeSymbol>& symbols = scratch.symbols;
  symbols.clear();
  // One symbol per character; an invalid byte is a character of its own (it will become a byte
  // token), so nothing is ever skipped.
  for (size_t pos = 0; pos < word.size();) {
    char32_t c = 0;
    const size_t length = decode_utf8(word, pos, c);
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back(MergeSymbol{static_cast<uint32_t>(pos), static_cast<uint32_t>(length),
                                  index - 1, index + 1, kNoToken});
    pos += length;
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  std::vector<uint64_t>& heap = scratch.heap;
  heap.clear();
  const auto greater = std::greater<uint64_t>();
  auto push_pair = [&](int32_t left) {
    if (left < 0) return;
    const MergeSymbol& ls = symbols[static_cast<size_t>(left)];
    if (ls.next < 0) return;
    const MergeSymbol& rs = symbols[static_cast<size_t>(ls.next)];
    const TokenId id = mergeable(word.substr(ls.offset, ls.length + rs.length));
    if (id == kNoToken) return;
    heap.push_back(candidate(vocab_.token(id).score, static_cast<uint32_t>(left)));
    std::push_heap(heap.begin(), heap.end(), greater);
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i) push_pair(static_cast<int32_t>(i));
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), greater);
    const auto left = static_cast<int32_t>(heap.back() & 0xFFFFFFFFu);
    const uint64_t key = heap.back() >> 32;
    heap.pop_back();
    MergeSymbol& ls = symbols[static_cast<size_t>(left)];
    if (ls.length == 0 || ls.next < 0) continue;
    MergeSymbol& rs = symbols[static_cast<size_t>(ls.next)];
    // Stale when either side changed: the pair must still spell a piece with the same score.
    const TokenId id = mergeable(word.substr(ls.offset, ls.length + rs.length));
    if (id == kNoToken || (candidate(vocab_.token(id).score, 0) >> 32) != key) continue;
    ls.length += rs.length;
    ls.id = id;
    rs.length = 0;
    ls.next = rs.next;
    if (ls.next >= 0) symbols[static_cast<size_t>(ls.next)].prev = left;
    push_pair(ls.prev);
    push_pair(left);
  }
  for (int32_t i = 0; i >= 0; i = symbols[static_cast<size_t>(i)].next) {
    const MergeSymbol& s = symbols[static_cast<size_t>(i)];
    TokenId id = s.id != kNoToken ? s.id : vocab_.find(word.substr(s.offset, s.length));
    if (id != kNoToken && vocab_.type(id) != TokenType::kControl) {
      out.push_back(id);
      continue;
    }
    for (size_t k = 0; k < s.length; ++k) {
      id = byte_token_[static_cast<uint8_t>(word[s.offset + k])];
      if (id == kNoToken) id = vocab_.special().unk;
      if (id != kNoToken) out.push_back(id);
    }
  }
}

}  // namespace synapse::tokenizer
