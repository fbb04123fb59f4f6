// SPDX-License-Identifier: Apache-2.0
// Tokenizer::from_hf_json: a Hugging Face tokenizer.json with a BPE model (byte-level, with
// Split/ByteLevel pre-tokenizers and an optional NFC normalizer) or a WordPiece model (BERT
// normalizer and pre-tokenizer), plus its added_tokens. Anything else is `unsupported`, named
// by its JSON path, rather than approximated.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tokenizer/bpe_model.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/wordpiece_model.h"

namespace synapse::tokenizer {
namespace {

using Json = nlohmann::json;

Status malformed(const std::string& source, const std::string& path, const std::string& what) {
  return Status(ErrorCode::kBadValue, what, ErrorWhere{.path = source, .field = path});
}

Status unsupported(const std::string& source, const std::string& path, const std::string& what) {
  return Status(ErrorCode::kUnsupported, what, ErrorWhere{.path = source, .field = path});
}

// Token id -> text from model.vocab and added_tokens; ids must be dense enough to index.
Result<std::unique_ptr<Vocab>> read_vocab(const Json& root, const std::string& source) {
  const Json& model = root["model"];
  const auto vocab_it = model.find("vocab");
  if (vocab_it == model.end() || !vocab_it->is_object()) {
    return malformed(source, "model.vocab", "model.vocab must be an object of token -> id");
  }
  constexpr uint64_t kMaxVocab = 1u << 24;
  std::vector<Vocab::Token> tokens;
  std::vector<bool> seen;
  auto place = [&](uint64_t id, Vocab::Token token) {
    if (id >= tokens.size()) {
      tokens.resize(id + 1, Vocab::Token{"", 0.0f, TokenType::kUnused});
      seen.resize(id + 1, false);
    }
    tokens[id] = std::move(token);
    seen[id] = true;
  };
  for (const auto& [text, id] : vocab_it->items()) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() >= kMaxVocab) {
      return malformed(source, "model.vocab", "token '" + text + "' has an invalid id");
    }
    place(id.get<uint64_t>(), Vocab::Token{text, 0.0f, TokenType::kNormal});
  }
  const auto added = root.find("added_tokens");
  if (added != root.end() && !added->is_null()) {
    if (!added->is_array()) return malformed(source, "added_tokens", "must be an array");
    for (size_t i = 0; i < added->size(); ++i) {
      const Json& a = (*added)[i];
      const std::string path = "added_tokens[" + std::to_string(i) + "]";
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_unsigned() ||
          a["id"].get<uint64_t>() >= kMaxVocab || !a.contains("content") ||
          !a["content"].is_string()) {
        return malformed(source, path, "an added token needs an id and a content string");
      }
      Vocab::Token token;
      token.text = a["content"].get<std::string>();
      token.type = a.value("special", false) ? TokenType::kControl : TokenType::kUserDefined;
      token.lstrip = a.value("lstrip", false);
      token.rstrip = a.value("rstrip", false);
      place(a["id"].get<uint64_t>(), std::move(token));
    }
  }
  auto vocab = std::make_unique<Vocab>();
  for (Vocab::Token& token : tokens) vocab->add(std::move(token));
  return vocab;
}

// Reads model.merges: "a b" strings (older files) or ["a", "b"] pairs (newer ones).
Result<std::vector<std::pair<std::string_view, std::string_view>>> read_merges(
    const Json& model, const std::string& source) {
  const auto merges_it = model.find("merges");
  if (merges_it == model.end() || !merges_it->is_array()) {
    return malformed(source, "model.merges", "a BPE model needs a merges array");
  }
  std::vector<std::pair<std::string_view, std::string_view>> merges;
  merges.reserve(merges_it->size());
  for (size_t i = 0; i < merges_it->size(); ++i) {
    const Json& m = (*merges_it)[i];
    if (m.is_string()) {
      const std::string& line = m.get_ref<const std::string&>();
      const size_t space = line.find(' ', 1);
      if (space != std::string::npos && space + 1 < line.size()) {
        const std::string_view view = line;
        merges.emplace_back(view.substr(0, space), view.substr(space + 1));
        continue;
      }
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get_ref<const std::string&>(), m[1].get_ref<const std::string&>());
      continue;
    }
    return malformed(source, "model.merges[" + std::to_string(i) + "]",
                     "a merge is \"a b\" or [\"a\", \"b\"]");
  }
  return merges;
}

// Collects the Split patterns of the pre-tokenizer (a Split, a ByteLevel, or a Sequence of them).
Status read_pre_tokenizer(const Json& pre, const std::string& source, const std::string& path,
                          std::vector<std::string>& patterns) {
  if (pre.is_null()) return ok_status();
  const std::string type = pre.value("type", "");
  if (type == "Sequence") {
    const auto list = pre.find("pretokenizers");
    if (list == pre.end() || !list->is_array()) {
      return malformed(source, path, "a Sequence needs pretokenizers");
    }
    for (size_t i = 0; i < list->size(); ++i) {
      SYN_RETURN_IF_ERROR(read_pre_tokenizer(
          (*list)[i], source, path + ".pretokenizers[" + std::to_string(i) + "]", patterns));
    }
    return ok_status();
  }
  if (type == "Split") {
    const auto pattern = pre.find("pattern");
    if (pattern == pre.end() || !pattern->is_object() || !pattern->contains("Regex") ||
        !(*pattern)["Regex"].is_string()) {
      return unsupported(source, path, "only Split with a Regex pattern is supported");
    }
    if (pre.value("behavior", "") != "Isolated" || pre.value("invert", false)) {
      return unsupported(source, path, "only the Isolated Split behaviour is supported");
    }
    patterns.push_back((*pattern)["Regex"].get<std::string>());
    return ok_status();
  }
  if (type == "ByteLevel") {
    if (pre.value("add_prefix_space", false)) {
      return unsupported(source, path, "ByteLevel add_prefix_space is not supported");
    }
    if (pre.value("use_regex", true)) {
      patterns.emplace_back(
          "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+");
    }
    return ok_status();
  }
  return unsupported(source, path, "pre-tokenizer type '" + type + "' is not supported");
}

// True for NFC, false for none; anything else is unsupported.
Result<bool> read_bpe_normalizer(const Json& normalizer, const std::string& source) {
  if (normalizer.is_null()) return false;
  const std::string type = normalizer.value("type", "");
  if (type == "NFC") return true;
  if (type == "Sequence" && normalizer.contains("normalizers") &&
      normalizer["normalizers"].is_array()) {
    bool any = false;
    for (const Json& n : normalizer["normalizers"]) {
      SYN_ASSIGN_OR_RETURN(const bool nfc, read_bpe_normalizer(n, source));
      any = any || nfc;
    }
    return any;
  }
  return unsupported(source, "normalizer", "normalizer '" + type + "' is not supported for BPE");
}

// A string field that may be absent or null: both read as "".
std::string optional_string(const Json& object, const char* name) {
  const auto it = object.find(name);
  return it == object.end() || it->is_null() ? std::string() : it->get<std::string>();
}

Result<Tokenizer> build_bpe(const Json& root, std::unique_ptr<Vocab> vocab,
                            const std::string& source) {
  const Json& model = root["model"];
  if (model.value("byte_fallback", false) ||
      !optional_string(model, "continuing_subword_prefix").empty() ||
      !optional_string(model, "end_of_word_suffix").empty()) {
    return unsupported(source, "model",
                       "only byte-level BPE is supported (no byte_fallback, no affixes)");
  }
  SYN_ASSIGN_OR_RETURN(const bool nfc_normalize,
                       read_bpe_normalizer(root.value("normalizer", Json()), source));
  std::vector<std::string> patterns;
  SYN_RETURN_IF_ERROR(
      read_pre_tokenizer(root.value("pre_tokenizer", Json()), source, "pre_tokenizer", patterns));
  auto pre = PreTokenizer::compile(patterns);
  if (!pre.ok()) return std::move(pre).take_status().with_field("pre_tokenizer");
  SYN_ASSIGN_OR_RETURN(const auto merges, read_merges(model, source));
  BpeOptions options{nfc_normalize, model.value("ignore_merges", false)};
  auto bpe = BpeModel::create(*vocab, merges, std::move(pre).value(), options);
  if (!bpe.ok()) return std::move(bpe).take_status().with_path(source).with_field("model.merges");
  return TokenizerBuilder::build(TokenizerKind::kByteLevelBpe, std::move(vocab),
                                 std::move(bpe).value());
}

Result<Tokenizer> build_wordpiece(const Json& root, std::unique_ptr<Vocab> vocab,
                                  const std::string& source) {
  const Json& model = root["model"];
  WordPieceOptions options;
  options.continuation_prefix = model.value("continuing_subword_prefix", "##");
  options.max_word_chars = model.value("max_input_chars_per_word", size_t{100});
  const std::string unk = model.value("unk_token", "[UNK]");
  SpecialTokens& s = vocab->special();
  s.unk = vocab->find(unk);
  const Json normalizer = root.value("normalizer", Json());
  if (!normalizer.is_null()) {
    if (normalizer.value("type", "") != "BertNormalizer") {
      return unsupported(source, "normalizer", "WordPiece needs no normalizer or BertNormalizer");
    }
    BertNormalizerOptions& n = options.normalizer;
    n.clean_text = normalizer.value("clean_text", true);
    n.handle_chinese_chars = normalizer.value("handle_chinese_chars", true);
    n.lowercase = normalizer.value("lowercase", true);
    const Json strip = normalizer.value("strip_accents", Json());
    n.strip_accents = strip.is_boolean() ? strip.get<bool>() : n.lowercase;
  } else {
    options.normalizer = BertNormalizerOptions{false, false, false, false};
  }
  const Json pre = root.value("pre_tokenizer", Json());
  if (!pre.is_null() && pre.value("type", "") != "BertPreTokenizer") {
    return unsupported(source, "pre_tokenizer", "WordPiece needs the BertPreTokenizer");
  }
  // A [CLS] ... [SEP] template adds them around the text.
  s.cls = vocab->find("[CLS]");
  s.sep = vocab->find("[SEP]");
  const Json post = root.value("post_processor", Json());
  const bool template_post = post.is_object() && post.value("type", "") == "TemplateProcessing";
  s.add_bos = template_post && s.cls != kNoToken;
  s.add_eos = template_post && s.sep != kNoToken;
  auto wpm = WordPieceModel::create(*vocab, std::move(options));
  if (!wpm.ok()) return std::move(wpm).take_status().with_path(source).with_field("model");
  return TokenizerBuilder::build(TokenizerKind::kWordPiece, std::move(vocab),
                                 std::move(wpm).value());
}

Result<Tokenizer> parse_hf_json(std::string_view json, const std::string& source) {
  const Json root = Json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    return malformed(source, "", "not a JSON object");
  }
  if (!root.contains("model") || !root["model"].is_object()) {
    return malformed(source, "model", "tokenizer.json has no model object");
  }
  const std::string type = root["model"].value("type", "");
  if (type != "BPE" && type != "WordPiece") {
    return unsupported(source, "model.type", "model type '" + type + "' is not supported");
  }
  SYN_ASSIGN_OR_RETURN(std::unique_ptr<Vocab> vocab, read_vocab(root, source));
  if (type == "BPE") return build_bpe(root, std::move(vocab), source);
  return build_wordpiece(root, std::move(vocab), source);
}

}  // namespace

Result<Tokenizer> Tokenizer::from_hf_json(std::string_view json, const std::string& source) {
  // nlohmann-json reports a field of the wrong type by throwing; that must not cross the layer.
  try {
    return parse_hf_json(json, source);
  } catch (const nlohmann::json::exception& e) {
    return malformed(source, "", std::string("malformed tokenizer.json: ") + e.what());
  }
}

Result<Tokenizer> Tokenizer::from_hf_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status(ErrorCode::kNotFound, "cannot open tokenizer.json", ErrorWhere{.path = path});
  }
  std::ostringstream text;
  text << in.rdbuf();
  return from_hf_json(text.str(), path);
}

}  // namespace synapse::tokenizer
