// SPDX-License-Identifier: Apache-2.0
// SentencePiece-style BPE over scored pieces (llama, phi-3 ...): spaces become "▁", a space is
// prefixed at the start of the input and after each special token (add_space_prefix), adjacent
// pieces are merged highest score first (leftmost on ties) while their concatenation is a
// piece, and characters the vocabulary lacks fall back to byte tokens <0xXX> (then <unk>).
//
// Speed: merging is local to a "word" (a run that starts at a "▁" following a non-"▁") whenever
// no piece contains "▁" after another character, which create() checks; each word is then
// merged once and cached. Otherwise the whole fragment is merged in one go.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "tokenizer/subword_model.h"

namespace synapse::tokenizer {

class SpmModel final : public SubwordModel {
 public:
  static Result<std::unique_ptr<SpmModel>> create(const Vocab& vocab, bool add_space_prefix);

  void encode(std::string_view text, bool after_special, EncodeScratch& scratch,
              std::vector<TokenId>& out) const override;
  void append_piece(TokenId id, std::string& out) const override;
  bool strips_leading_space() const override { return add_space_prefix_; }

 private:
  SpmModel(const Vocab& vocab, bool add_space_prefix)
      : vocab_(vocab), add_space_prefix_(add_space_prefix) {}
  void encode_word(std::string_view word, EncodeScratch& scratch, std::vector<TokenId>& out) const;
  void merge_word(std::string_view word, EncodeScratch& scratch, std::vector<TokenId>& out) const;
  // A piece merges may produce (ordinary or user-defined), or kNoToken.
  TokenId mergeable(std::string_view text) const;

  const Vocab& vocab_;
  bool add_space_prefix_;
  bool split_words_ = false;
  std::array<TokenId, 256> byte_token_{};  // <0xXX>
};

}  // namespace synapse::tokenizer
