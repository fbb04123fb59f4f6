// SPDX-License-Identifier: Apache-2.0
// WordPiece (BERT): normalized words are split greedily into the longest known prefix, then the
// longest known continuation, and so on; a word that cannot be spelled this way, or that is
// longer than 100 characters, becomes [UNK] as a whole (Hugging Face's rule). The vocabulary may
// mark word starts (GGUF's "▁word") or continuations (tokenizer.json's "##piece").
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "tokenizer/bert_normalizer.h"
#include "tokenizer/subword_model.h"

namespace synapse::tokenizer {

struct WordPieceOptions {
  std::string word_prefix;          // "▁" in GGUF vocabularies, "" in tokenizer.json
  std::string continuation_prefix;  // "" in GGUF vocabularies, "##" in tokenizer.json
  size_t max_word_chars = 100;
  BertNormalizerOptions normalizer;
};

class WordPieceModel final : public SubwordModel {
 public:
  static Result<std::unique_ptr<WordPieceModel>> create(const Vocab& vocab,
                                                        WordPieceOptions options);

  void encode(std::string_view text, bool after_special, EncodeScratch& scratch,
              std::vector<TokenId>& out) const override;
  void append_piece(TokenId id, std::string& out) const override;
  bool strips_leading_space() const override { return true; }
  bool normalizes() const override { return true; }

 private:
  WordPieceModel(const Vocab& vocab, WordPieceOptions options)
      : vocab_(vocab), options_(std::move(options)) {}
  void encode_word(std::string_view word, EncodeScratch& scratch, std::vector<TokenId>& out) const;

  const Vocab& vocab_;
  WordPieceOptions options_;
};

}  // namespace synapse::tokenizer
