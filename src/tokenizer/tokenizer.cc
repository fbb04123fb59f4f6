// SPDX-License-Identifier: Apache-2.0
#include "tokenizer/tokenizer.h"

namespace synapse::tokenizer {

std::string_view tokenizer_kind_name(TokenizerKind kind) {
  switch (kind) {
    case TokenizerKind::kSentencePiece:
      return "spm";
    case TokenizerKind::kByteLevelBpe:
      return "bpe";
    case TokenizerKind::kWordPiece:
      return "wordpiece";
  }
  return "unknown";
}

Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer TokenizerBuilder::build(TokenizerKind kind, std::unique_ptr<Vocab> vocab,
                                  std::unique_ptr<SubwordModel> model) {
  Tokenizer t;
  t.kind_ = kind;
  t.splitter_ = SpecialSplitter(*vocab);
  t.vocab_ = std::move(vocab);
  t.model_ = std::move(model);
  return t;
}

void Tokenizer::encode(std::string_view text, const EncodeOptions& options, EncodeScratch& scratch,
                       std::vector<TokenId>& out) const {
  const SpecialTokens& special = vocab_->special();
  const bool word_piece = kind_ == TokenizerKind::kWordPiece;
  const TokenId first = word_piece ? special.cls : special.bos;
  const TokenId last = word_piece ? special.sep : special.eos;
  if (options.add_special && special.add_bos && first != kNoToken) out.push_back(first);
  bool after_special = true;  // the start of the input counts as following a special token
  splitter_.split(
      text, options.parse_special,
      [&](std::string_view fragment) {
        model_->encode(fragment, after_special, scratch, out);
        after_special = false;
      },
      [&](TokenId id) {
        out.push_back(id);
        after_special = true;
      });
  if (options.add_special && special.add_eos && last != kNoToken) out.push_back(last);
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  EncodeScratch scratch;
  std::vector<TokenId> out;
  encode(text, options, scratch, out);
  return out;
}

void Tokenizer::append_token_bytes(TokenId id, const DecodeOptions& options,
                                   std::string& out) const {
  const TokenType type = vocab_->type(id);
  if (type == TokenType::kControl || type == TokenType::kUnknown) {
    if (options.render_special) out += vocab_->text(id);
    return;
  }
  if (type == TokenType::kUserDefined) {
    out += vocab_->text(id);
    return;
  }
  model_->append_piece(id, out);
}

Result<std::string> Tokenizer::decode(std::span<const TokenId> ids,
                                      const DecodeOptions& options) const {
  std::string out;
  bool strip = options.strip_leading_space && model_->strips_leading_space();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!vocab_->contains(ids[i])) {
      return Status(ErrorCode::kInvalidArgument,
                    "token id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                        " is outside the vocabulary of " + std::to_string(vocab_->size()));
    }
    const size_t before = out.size();
    append_token_bytes(ids[i], options, out);
    // The encoder prefixed a space to the text; the first piece that writes anything loses it.
    if (strip && out.size() > before) {
      if (before == 0 && out[0] == ' ') out.erase(0, 1);
      strip = false;
    }
  }
  return out;
}

}  // namespace synapse::tokenizer
