// SPDX-License-Identifier: Apache-2.0
#include "tokenizer/bpe_model.h"

#include <algorithm>

#include "base/utf8.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/unicode.h"

namespace synapse::tokenizer {

Result<std::unique_ptr<BpeModel>> BpeModel::create(
    const Vocab& vocab, std::span<const std::pair<std::string_view, std::string_view>> merges,
    PreTokenizer pre_tokenizer, BpeOptions options) {
  std::unique_ptr<BpeModel> model(new BpeModel(vocab, std::move(pre_tokenizer), options));
  model->bytes_.resize(vocab.size());
  model->byte_token_.fill(kNoToken);
  for (TokenId id = 0; static_cast<size_t>(id) < vocab.size(); ++id) {
    const Vocab::Token& token = vocab.token(id);
    std::string& bytes = model->bytes_[static_cast<size_t>(id)];
    // Control and user-defined tokens are written as plain text (deepseek's "õ" is the text
    // "õ", not byte 0xF5); ordinary tokens are in the byte-level alphabet.
    std::optional<std::string> decoded;
    if (token.type != TokenType::kControl && token.type != TokenType::kUserDefined) {
      decoded = byte_level_decode(token.text);
    }
    bytes = decoded ? std::move(*decoded) : token.text;
    if (token.type == TokenType::kControl || token.type == TokenType::kUserDefined) continue;
    model->by_bytes_.try_emplace(bytes, id);
    if (bytes.size() == 1 && model->byte_token_[static_cast<uint8_t>(bytes[0])] == kNoToken) {
      model->byte_token_[static_cast<uint8_t>(bytes[0])] = id;
    }
  }
  // Bytes that never occur in UTF-8 (C0, C1, F5..FF) may lack an ordinary token: deepseek's
  // vocabularies add them as user-defined tokens ("À", "õ" ...). Invalid input bytes then use
  // those (what the original tokenizer's byte-level decoder maps back to the byte), although
  // they decode as the text they match ("õ"), so such bytes cannot round-trip.
  for (TokenId id = 0; static_cast<size_t>(id) < vocab.size(); ++id) {
    if (vocab.type(id) != TokenType::kUserDefined) continue;
    const std::optional<std::string> decoded = byte_level_decode(vocab.text(id));
    if (decoded && decoded->size() == 1 &&
        model->byte_token_[static_cast<uint8_t>((*decoded)[0])] == kNoToken) {
      model->byte_token_[static_cast<uint8_t>((*decoded)[0])] = id;
    }
  }
  model->merges_.reserve(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    joined.assign(left);
    joined += right;
    const TokenId l = vocab.find(left), r = vocab.find(right), m = vocab.find(joined);
    if (l == kNoToken || r == kNoToken || m == kNoToken) {
      return Status(ErrorCode::kBadValue, "merge " + std::to_string(rank) + " '" +
                                              std::string(left) + " " + std::string(right) +
                                              "' names a token the vocabulary lacks");
    }
    // The first (lowest-rank) occurrence of a pair wins, as in the reference implementations.
    model->merges_.try_emplace(pair_key(l, r), Merge{static_cast<uint32_t>(rank), m});
  }
  return model;
}

void BpeModel::append_piece(TokenId id, std::string& out) const {
  out += bytes_[static_cast<size_t>(id)];
}

void BpeModel::encode(std::string_view text, bool /*after_special*/, EncodeScratch& scratch,
                      std::vector<TokenId>& out) const {
  scratch.bind(this);
  // Invalid UTF-8 cannot go through the regex or NFC; each invalid byte becomes a piece of its
  // own (its byte token), and the valid runs between them are encoded normally. This keeps
  // decode(encode(x)) == x for any bytes.
  size_t pos = 0;
  while (pos < text.size()) {
    const std::optional<size_t> bad = find_invalid_utf8(text.substr(pos));
    const size_t run_end = bad ? pos + *bad : text.size();
    if (run_end > pos) encode_valid(text.substr(pos, run_end - pos), scratch, out);
    if (!bad) break;
    const TokenId byte_id = byte_token_[static_cast<uint8_t>(text[run_end])];
    if (byte_id != kNoToken) {
      out.push_back(byte_id);
    } else if (vocab_.special().unk != kNoToken) {
      out.push_back(vocab_.special().unk);
    }
    pos = run_end + 1;
  }
}

void BpeModel::encode_valid(std::string_view text, EncodeScratch& scratch,
                            std::vector<TokenId>& out) const {
  if (options_.nfc && !is_trivially_nfc(text)) {
    std::string normalized;
    if (nfc(text, normalized)) {
      pre_.split(normalized, scratch.bounds,
                 [&](std::string_view word) { encode_word(word, scratch, out); });
      return;
    }
  }
  pre_.split(text, scratch.bounds, [&](std::string_view word) { encode_word(word, scratch, out); });
}

void BpeModel::encode_word(std::string_view word, EncodeScratch& scratch,
                           std::vector<TokenId>& out) const {
  scratch.cache.append(word, out, [&](std::string_view w, std::vector<TokenId>& ids) {
    if (options_.ignore_merges) {
      const auto it = by_bytes_.find(w);
      if (it != by_bytes_.end()) {
        ids.push_back(it->second);
        return;
      }
    }
    merge_word(w, scratch, ids);
  });
}

namespace {

// A candidate merge, ordered by rank then by position (lower first), packed in one integer so
// the heap compares one number.
uint64_t candidate(uint32_t rank, uint32_t pos) {
  return (static_cast<uint64_t>(rank) << 32) | pos;
}

}  // namespace

void BpeModel::merge_word(std::string_view word, EncodeScratch& scratch,
                          std::vector<TokenId>& out) const {
  const size_t n = word.size();
  if (n == 0) return;
  std::vector<MergeSymbol>& symbols = scratch.symbols;
  symbols.resize(n);
  for (size_t i = 0; i < n; ++i) {
    symbols[i] = MergeSymbol{static_cast<uint32_t>(i), 1, static_cast<int32_t>(i) - 1,
                             i + 1 < n ? static_cast<int32_t>(i + 1) : -1,
                             byte_token_[static_cast<uint8_t>(word[i])]};
  }
  std::vector<uint64_t>& heap = scratch.heap;
  heap.clear();
  const auto greater = std::greater<uint64_t>();
  auto push_pair = [&](int32_t left) {
    const int32_t right = symbols[static_cast<size_t>(left)].next;
    if (left < 0 || right < 0) return;
    const TokenId l = symbols[static_cast<size_t>(left)].id;
    const TokenId r = symbols[static_cast<size_t>(right)].id;
    if (l == kNoToken || r == kNoToken) return;
    const auto it = merges_.find(pair_key(l, r));
    if (it == merges_.end()) return;
    heap.push_back(candidate(it->second.rank, static_cast<uint32_t>(left)));
    std::push_heap(heap.begin(), heap.end(), greater);
  };
  for (size_t i = 0; i + 1 < n; ++i) push_pair(static_cast<int32_t>(i));
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), greater);
    const uint64_t top = heap.back();
    heap.pop_back();
    const auto rank = static_cast<uint32_t>(top >> 32);
    const auto left = static_cast<int32_t>(top & 0xFFFFFFFFu);
    MergeSymbol& ls = symbols[static_cast<size_t>(left)];
    if (ls.length == 0 || ls.id == kNoToken || ls.next < 0) continue;
    MergeSymbol& rs = symbols[static_cast<size_t>(ls.next)];
    // Stale when either side changed since the candidate was pushed.
    const auto it = merges_.find(pair_key(ls.id, rs.id));
    if (it == merges_.end() || it->second.rank != rank) continue;
    ls.id = it->second.result;
    const int32_t after = rs.next;
    ls.length += rs.length;
    rs.length = 0;
    ls.next = after;
    if (after >= 0) symbols[static_cast<size_t>(after)].prev = left;
    if (ls.prev >= 0) push_pair(ls.prev);
    push_pair(left);
  }
  for (int32_t i = 0; i >= 0; i = symbols[static_cast<size_t>(i)].next) {
    const TokenId id = symbols[static_cast<size_t>(i)].id;
    if (id != kNoToken) {
      out.push_back(id);
    } else if (vocab_.special().unk != kNoToken) {
      out.push_back(vocab_.special().unk);
    }
  }
}

}  // namespace synapse::tokenizer
