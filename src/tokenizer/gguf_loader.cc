// SPDX-License-Identifier: Apache-2.0
// Tokenizer::from_gguf: reads tokenizer.ggml.* (the keys llama.cpp's converters write) and
// builds the tokenizer the model's original one behaves like.
#include <algorithm>
#include <cctype>
#include <type_traits>

#include "format/gguf/gguf_keys.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/spm_model.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/wordpiece_model.h"

namespace synapse::tokenizer {
namespace {

namespace key = gguf_key;

// Texts that mark the end of a turn or of generation. A GGUF that lists one of them as a
// user-defined token (phi-3's "</s>") means a control token; llama.cpp retypes them the same
// way, and its test pairs depend on it. Ordinary tokens keep their type (Qwen's "</s>" is text).
constexpr std::string_view kEndMarkers[] = {"</s>",
                                            "<|eot_id|>",
                                            "<|im_end|>",
                                            "<|end|>",
                                            "<end_of_turn>",
                                            "<|endoftext|>",
                                            "<|end_of_text|>",
                                            "<|eom_id|>",
                                            "<EOT>",
                                            "_<EOT>",
                                            "<\xEF\xBD\x9C"
                                            "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>"};

Result<TokenId> read_id(const GgufMetadata& metadata, std::string_view name, TokenId fallback,
                        size_t vocab_size) {
  if (!metadata.contains(name)) return fallback;
  SYN_ASSIGN_OR_RETURN(const uint32_t id, metadata.get_u32(name));
  // llama.cpp writes -1 (as u32 max) for "none" in some converters.
  if (id == 0xFFFFFFFFu) return kNoToken;
  if (id >= vocab_size) {
    return Status(ErrorCode::kBadValue, "token id " + std::to_string(id) +
                                            " is outside the vocabulary of " +
                                            std::to_string(vocab_size))
        .with_key(std::string(name));
  }
  return static_cast<TokenId>(id);
}

// An optional array with one value per token (scores, types); left empty when absent.
template <typename T>
Status read_per_token(const GgufMetadata& metadata, std::string_view name, size_t n_tokens,
                      std::vector<T>& out) {
  if (!metadata.contains(name)) return ok_status();
  Result<std::vector<T>> values = [&]() -> Result<std::vector<T>> {
    if constexpr (std::is_same_v<T, float>) {
      return metadata.get_f32_array(name);
    } else {
      return metadata.get_i32_array(name);
    }
  }();
  if (!values.ok()) return std::move(values).take_status();
  if (values->size() != n_tokens) {
    return Status(ErrorCode::kSizeMismatch, "has " + std::to_string(values->size()) +
                                                " values for " + std::to_string(n_tokens) +
                                                " tokens")
        .with_key(std::string(name));
  }
  out = std::move(values).value();
  return ok_status();
}

Result<std::unique_ptr<Vocab>> read_vocab(const GgufMetadata& metadata, std::string_view model) {
  SYN_ASSIGN_OR_RETURN(const auto texts, metadata.get_string_array(key::kTokenizerTokens));
  if (texts.empty()) {
    return Status(ErrorCode::kBadValue, "the vocabulary is empty")
        .with_key(std::string(key::kTokenizerTokens));
  }
  std::vector<float> scores;
  SYN_RETURN_IF_ERROR(read_per_token(metadata, key::kTokenizerScores, texts.size(), scores));
  std::vector<int32_t> types;
  SYN_RETURN_IF_ERROR(read_per_token(metadata, key::kTokenizerTokenType, texts.size(), types));
  auto vocab = std::make_unique<Vocab>();
  for (size_t i = 0; i < texts.size(); ++i) {
    Vocab::Token token;
    token.text = std::string(texts[i]);
    token.score = scores.empty() ? 0.0f : scores[i];
    const int32_t type = types.empty() ? 1 : types[i];
    if (type < 0 || type > static_cast<int32_t>(TokenType::kByte)) {
      return Status(ErrorCode::kBadValue,
                    "token " + std::to_string(i) + " has unknown type " + std::to_string(type))
          .with_key(std::string(key::kTokenizerTokenType));
    }
    token.type = type == 0 ? TokenType::kNormal : static_cast<TokenType>(type);
    if (token.type == TokenType::kUserDefined &&
        std::find(std::begin(kEndMarkers), std::end(kEndMarkers), token.text) !=
            std::end(kEndMarkers)) {
      token.type = TokenType::kControl;
    }
    vocab->add(std::move(token));
  }

  const bool spm = model == "llama";
  const bool bert = model == "bert";
  const size_t n = vocab->size();
  SpecialTokens& s = vocab->special();
  // Defaults where a key is absent are llama.cpp's for the same model type.
  SYN_ASSIGN_OR_RETURN(s.bos, read_id(metadata, key::kTokenizerBosId, spm ? 1 : kNoToken, n));
  SYN_ASSIGN_OR_RETURN(s.eos, read_id(metadata, key::kTokenizerEosId, spm ? 2 : kNoToken, n));
  SYN_ASSIGN_OR_RETURN(
      s.unk, read_id(metadata, key::kTokenizerUnknownId, spm ? 0 : (bert ? 100 : kNoToken), n));
  SYN_ASSIGN_OR_RETURN(s.sep,
                       read_id(metadata, key::kTokenizerSeparatorId, bert ? 102 : kNoToken, n));
  SYN_ASSIGN_OR_RETURN(s.pad, read_id(metadata, key::kTokenizerPaddingId, kNoToken, n));
  SYN_ASSIGN_OR_RETURN(s.cls, read_id(metadata, key::kTokenizerClsId, bert ? 101 : kNoToken, n));
  SYN_ASSIGN_OR_RETURN(s.mask, read_id(metadata, key::kTokenizerMaskId, kNoToken, n));
  SYN_ASSIGN_OR_RETURN(s.add_bos, metadata.get_bool_or(key::kTokenizerAddBos, spm || bert));
  SYN_ASSIGN_OR_RETURN(s.add_eos, metadata.get_bool_or(key::kTokenizerAddEos, bert));
  return vocab;
}

// Phi-3's special tokens swallow the white space after them (rstrip in its tokenizer.json),
// which GGUF cannot express; llama.cpp recognises the model by name, and so do we.
Status apply_name_rules(const GgufMetadata& metadata, Vocab& vocab) {
  SYN_ASSIGN_OR_RETURN(const std::string_view raw_name,
                       metadata.get_string_or(key::kName, std::string_view()));
  std::string name(raw_name);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (name.find("phi-3") == std::string::npos && name.find("phi3") == std::string::npos) {
    return ok_status();
  }
  for (TokenId id = 0; static_cast<size_t>(id) < vocab.size(); ++id) {
    Vocab::Token& token = vocab.mutable_token(id);
    const bool special = token.type == TokenType::kControl ||
                         token.type == TokenType::kUserDefined || token.type == TokenType::kUnknown;
    if (special) token.rstrip = true;
    if (token.text == "<unk>" || token.text == "<s>" || token.text == "<|endoftext|>") {
      token.rstrip = false;
    }
  }
  return ok_status();
}

Result<std::vector<std::pair<std::string_view, std::string_view>>> read_merges(
    const GgufMetadata& metadata) {
  SYN_ASSIGN_OR_RETURN(const auto lines, metadata.get_string_array(key::kTokenizerMerges));
  std::vector<std::pair<std::string_view, std::string_view>> merges;
  merges.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string_view line = lines[i];
    // Byte-level token text has no plain space ("Ġ" stands for it), so one space separates.
    const size_t space = line.find(' ', 1);
    if (space == std::string_view::npos || space + 1 >= line.size()) {
      return Status(ErrorCode::kBadValue,
                    "merge " + std::to_string(i) + " is not two tokens separated by a space")
          .with_key(std::string(key::kTokenizerMerges));
    }
    merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  return merges;
}

Result<Tokenizer> build_from_gguf(const GgufMetadata& metadata) {
  SYN_ASSIGN_OR_RETURN(const std::string_view model, metadata.get_string(key::kTokenizerModel));
  if (model != "llama" && model != "gpt2" && model != "bert") {
    return Status(ErrorCode::kUnsupported, "tokenizer model '" + std::string(model) +
                                               "' is not supported (supported: llama, gpt2, bert)")
        .with_key(std::string(key::kTokenizerModel));
  }
  SYN_ASSIGN_OR_RETURN(std::unique_ptr<Vocab> vocab, read_vocab(metadata, model));
  SYN_RETURN_IF_ERROR(apply_name_rules(metadata, *vocab));

  if (model == "llama") {
    SYN_ASSIGN_OR_RETURN(const bool space_prefix,
                         metadata.get_bool_or(key::kTokenizerAddSpacePrefix, true));
    SYN_ASSIGN_OR_RETURN(auto spm, SpmModel::create(*vocab, space_prefix));
    return TokenizerBuilder::build(TokenizerKind::kSentencePiece, std::move(vocab), std::move(spm));
  }
  if (model == "bert") {
    // llama.cpp's converter writes "▁word" and "piece"; a vocabulary without any "▁" piece
    // but with "##piece" ones keeps the original WordPiece form.
    bool phantom_space = false, hashes = false;
    for (TokenId id = 0; static_cast<size_t>(id) < vocab->size(); ++id) {
      const std::string_view text = vocab->text(id);
      phantom_space = phantom_space || text.starts_with("\xE2\x96\x81");
      hashes = hashes || (text.size() > 2 && text.starts_with("##"));
    }
    WordPieceOptions options;
    if (phantom_space || !hashes) {
      options.word_prefix = "\xE2\x96\x81";
    } else {
      options.continuation_prefix = "##";
    }
    SYN_ASSIGN_OR_RETURN(auto wpm, WordPieceModel::create(*vocab, std::move(options)));
    return TokenizerBuilder::build(TokenizerKind::kWordPiece, std::move(vocab), std::move(wpm));
  }
  SYN_ASSIGN_OR_RETURN(const std::string_view pre_name,
                       metadata.get_string_or(key::kTokenizerPre, "default"));
  auto spec = find_pre_tokenizer(pre_name);
  if (!spec.ok()) return std::move(spec).take_status().with_key(std::string(key::kTokenizerPre));
  SYN_ASSIGN_OR_RETURN(PreTokenizer pre, PreTokenizer::compile(*spec));
  SYN_ASSIGN_OR_RETURN(const auto merges, read_merges(metadata));
  auto bpe =
      BpeModel::create(*vocab, merges, std::move(pre), BpeOptions{spec->nfc, spec->ignore_merges});
  if (!bpe.ok()) return std::move(bpe).take_status().with_key(std::string(key::kTokenizerMerges));
  return TokenizerBuilder::build(TokenizerKind::kByteLevelBpe, std::move(vocab),
                                 std::move(bpe).value());
}

}  // namespace

Result<Tokenizer> Tokenizer::from_gguf(const GgufMetadata& metadata) {
  return build_from_gguf(metadata);
}

}  // namespace synapse::tokenizer
