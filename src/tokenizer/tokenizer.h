// SPDX-License-Identifier: Apache-2.0
// A model's tokenizer: text -> token ids -> text, as the model's original tokenizer does it.
// Built from a GGUF's tokenizer.ggml.* metadata (gguf_loader.cc) or a Hugging Face
// tokenizer.json (hf_json_loader.cc); holds the vocabulary, the special-token splitter and one
// subword model (SentencePiece BPE, byte-level BPE or WordPiece). Immutable and thread-safe;
// per-thread state lives in an EncodeScratch.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "format/gguf/gguf_metadata.h"
#include "tokenizer/special_splitter.h"
#include "tokenizer/subword_model.h"
#include "tokenizer/vocab.h"

namespace synapse::tokenizer {

enum class TokenizerKind { kSentencePiece, kByteLevelBpe, kWordPiece };
std::string_view tokenizer_kind_name(TokenizerKind kind);  // "spm", "bpe", "wordpiece"

struct EncodeOptions {
  bool add_special = true;     // BOS/EOS (CLS/SEP) as the model's metadata asks
  bool parse_special = false;  // control-token text in the input becomes that token
};

struct DecodeOptions {
  bool render_special = false;      // write control tokens' text (otherwise they decode to nothing)
  bool strip_leading_space = true;  // drop the space the encoder prefixed (SentencePiece, BERT)
};

class Tokenizer {
 public:
  static Result<Tokenizer> from_gguf(const GgufMetadata& metadata);
  // The text of a tokenizer.json; `source` names it in errors.
  static Result<Tokenizer> from_hf_json(std::string_view json, const std::string& source);
  static Result<Tokenizer> from_hf_json_file(const std::string& path);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  TokenizerKind kind() const { return kind_; }
  const Vocab& vocab() const { return *vocab_; }

  // Appends the ids of `text` to `out`. Never fails: any bytes encode (invalid UTF-8 through
  // byte tokens where the vocabulary has them).
  void encode(std::string_view text, const EncodeOptions& options, EncodeScratch& scratch,
              std::vector<TokenId>& out) const;
  std::vector<TokenId> encode(std::string_view text, const EncodeOptions& options = {}) const;

  // The bytes `ids` stand for; invalid_argument naming the position for an id out of range.
  Result<std::string> decode(std::span<const TokenId> ids, const DecodeOptions& options = {}) const;
  // The bytes of one token as they appear inside a decoded text (no leading-space rule).
  void append_token_bytes(TokenId id, const DecodeOptions& options, std::string& out) const;
  // The token's text as the vocabulary stores it, for display.
  std::string_view token_text(TokenId id) const { return vocab_->text(id); }
  bool strips_leading_space() const { return model_->strips_leading_space(); }
  bool normalizes() const { return model_->normalizes(); }

 private:
  Tokenizer() = default;
  friend class TokenizerBuilder;

  TokenizerKind kind_ = TokenizerKind::kByteLevelBpe;
  std::unique_ptr<Vocab> vocab_;  // heap-allocated: the model and the splitter point into it
  std::unique_ptr<SubwordModel> model_;
  SpecialSplitter splitter_;
};

// Assembles a Tokenizer; used by the loaders.
class TokenizerBuilder {
 public:
  static Tokenizer build(TokenizerKind kind, std::unique_ptr<Vocab> vocab,
                         std::unique_ptr<SubwordModel> model);
};

}  // namespace synapse::tokenizer
