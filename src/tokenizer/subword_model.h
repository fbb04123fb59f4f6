// SPDX-License-Identifier: Apache-2.0
// The algorithm that turns ordinary text (no special tokens in it) into ids: SentencePiece-style
// BPE, byte-level BPE or WordPiece. A Tokenizer owns one, together with its Vocab, and handles
// special tokens, BOS/EOS and decoding around it. Models are immutable; everything that changes
// while encoding lives in an EncodeScratch the caller owns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"
#include "tokenizer/word_cache.h"

namespace synapse::tokenizer {

// One symbol of a word being merged (BPE and SentencePiece): a byte range of the word, the token
// it currently is, and its neighbours in a doubly linked list over positions.
struct MergeSymbol {
  uint32_t offset;
  uint32_t length;  // 0: merged into its left neighbour
  int32_t prev;
  int32_t next;
  TokenId id;
};

// Buffers and the word cache reused from one encode call to the next. One per thread; it
// remembers which model filled its cache and forgets it when used with another.
struct EncodeScratch {
  const void* owner = nullptr;
  WordCache cache;
  std::string text;  // normalized / escaped copy of a fragment
  std::string word;  // one word being assembled
  std::vector<size_t> bounds;
  std::vector<TokenId> ids;
  std::vector<MergeSymbol> symbols;
  std::vector<uint64_t> heap;  // candidate merges, each packed in one integer

  void bind(const void* model) {
    if (owner != model) {
      cache.clear();
      owner = model;
    }
  }
};

class SubwordModel {
 public:
  virtual ~SubwordModel() = default;
  // Appends the ids of `text`. `after_special` says that the fragment follows a special token or
  // starts the input (SentencePiece then prefixes a space). Never fails: text that the
  // vocabulary cannot spell falls back to byte tokens or the unknown token.
  virtual void encode(std::string_view text, bool after_special, EncodeScratch& scratch,
                      std::vector<TokenId>& out) const = 0;
  // Appends the bytes ordinary token `id` stands for (not used for control tokens).
  virtual void append_piece(TokenId id, std::string& out) const = 0;
  // Whether encoding normalizes the text first (NFC, BERT's rules): decode(encode(x)) is then the
  // normalized x, not x.
  virtual bool normalizes() const { return false; }
  // Whether decoding drops one leading space from the first piece (the space the encoder adds).
  virtual bool strips_leading_space() const { return false; }
};

}  // namespace synapse::tokenizer
