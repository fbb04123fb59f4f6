// SPDX-License-Identifier: Apache-2.0
#include "tokenizer/wordpiece_model.h"

#include "tokenizer/unicode.h"

namespace synapse::tokenizer {

Result<std::unique_ptr<WordPieceModel>> WordPieceModel::create(const Vocab& vocab,
                                                               WordPieceOptions options) {
  if (vocab.special().unk == kNoToken) {
    return Status(ErrorCode::kMissingKey, "a WordPiece vocabulary needs an unknown token");
  }
  return std::unique_ptr<WordPieceModel>(new WordPieceModel(vocab, std::move(options)));
}

void WordPieceModel::encode(std::string_view text, bool /*after_special*/, EncodeScratch& scratch,
                            std::vector<TokenId>& out) const {
  scratch.bind(this);
  std::string normalized;
  bert_normalize(text, options_.normalizer, normalized, scratch.text);
  bert_split_words(normalized, [&](std::string_view word) { encode_word(word, scratch, out); });
}

void WordPieceModel::encode_word(std::string_view word, EncodeScratch& scratch,
                                 std::vector<TokenId>& out) const {
  size_t chars = 0;
  for (size_t pos = 0; pos < word.size(); ++chars) {
    char32_t c = 0;
    pos += decode_utf8(word, pos, c);
  }
  if (chars > options_.max_word_chars) {
    out.push_back(vocab_.special().unk);
    return;
  }
  const size_t first = out.size();
  std::string& candidate = scratch.word;
  size_t start = 0;
  while (start < word.size()) {
    const std::string& prefix = start == 0 ? options_.word_prefix : options_.continuation_prefix;
    // Longest match first: shrink the end one character at a time.
    size_t end = word.size();
    TokenId found = kNoToken;
    while (end > start) {
      candidate.assign(prefix);
      candidate.append(word.substr(start, end - start));
      found = vocab_.find(candidate);
      if (found != kNoToken) break;
      do {
        --end;
      } while (end > start && (static_cast<uint8_t>(word[end]) & 0xC0) == 0x80);
    }
    if (found == kNoToken) {
      out.resize(first);
      out.push_back(vocab_.special().unk);
      return;
    }
    out.push_back(found);
    start = end;
  }
}

void WordPieceModel::append_piece(TokenId id, std::string& out) const {
  std::string_view text = vocab_.text(id);
  const std::string& word = options_.word_prefix;
  const std::string& cont = options_.continuation_prefix;
  if (!cont.empty()) {
    // tokenizer.json form: pieces start words unless they carry the continuation prefix.
    if (text.substr(0, cont.size()) == cont) {
      out.append(text.substr(cont.size()));
    } else {
      out += ' ';
      out.append(text);
    }
    return;
  }
  if (!word.empty() && text.substr(0, word.size()) == word) {
    out += ' ';
    out.append(text.substr(word.size()));
    return;
  }
  out.append(text);
}

}  // namespace synapse::tokenizer
