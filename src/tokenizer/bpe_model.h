// SPDX-License-Identifier: Apache-2.0
// Byte-level BPE (GPT-2, Llama 3, Qwen2 ...): the text is NFC-normalized when the original
// tokenizer does so, split by the pre-tokenizer, and each piece's bytes are merged pairwise by
// merge rank (lowest first, leftmost first on ties), exactly as Hugging Face tokenizers do.
// Merges are held as token-id pairs, so the merge loop compares integers, never strings.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/status.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/subword_model.h"

namespace synapse::tokenizer {

struct BpeOptions {
  bool nfc = false;
  bool ignore_merges = false;
};

class BpeModel final : public SubwordModel {
 public:
  // `merges` are pairs of token texts (byte-level form). A merge whose parts or result are not
  // in the vocabulary is a bad_value error naming it.
  static Result<std::unique_ptr<BpeModel>> create(
      const Vocab& vocab, std::span<const std::pair<std::string_view, std::string_view>> merges,
      PreTokenizer pre_tokenizer, BpeOptions options);

  void encode(std::string_view text, bool after_special, EncodeScratch& scratch,
              std::vector<TokenId>& out) const override;
  void append_piece(TokenId id, std::string& out) const override;
  bool normalizes() const override { return options_.nfc; }

  // The raw bytes of each token (byte-level text decoded; other text as stored).
  const std::string& token_bytes(TokenId id) const { return bytes_[static_cast<size_t>(id)]; }

 private:
  BpeModel(const Vocab& vocab, PreTokenizer pre_tokenizer, BpeOptions options)
      : vocab_(vocab), pre_(std::move(pre_tokenizer)), options_(options) {}
  void encode_valid(std::string_view text, EncodeScratch& scratch, std::vector<TokenId>& out) const;
  void encode_word(std::string_view word, EncodeScratch& scratch, std::vector<TokenId>& out) const;
  void merge_word(std::string_view word, EncodeScratch& scratch, std::vector<TokenId>& out) const;

  struct Merge {
    uint32_t rank;
    TokenId result;
  };
  static uint64_t pair_key(TokenId left, TokenId right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }

  const Vocab& vocab_;
  PreTokenizer pre_;
  BpeOptions options_;
  std::vector<std::string> bytes_;
  std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>> by_bytes_;
  std::array<TokenId, 256> byte_token_{};
  std::unordered_map<uint64_t, Merge> merges_;
};

}  // namespace synapse::tokenizer
