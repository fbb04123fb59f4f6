// SPDX-License-Identifier: Apache-2.0
#include "synth/synthetic_vocab.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <unordered_map>

#include "format/gguf/gguf_keys.h"

namespace synapse {
namespace {

constexpr int32_t kTokenTypeNormal = 1;
constexpr int32_t kTokenTypeControl = 3;
constexpr int32_t kTokenTypeUnused = 5;
// Merges learned from the built-in corpus stop when its pairs run out (a few hundred tokens);
// a larger vocabulary (a benchmark of a 262,144-token model's shape) is padded with unused
// tokens, as real vocabularies reserve them, which no text encodes to.
constexpr uint32_t kMaxSyntheticVocab = 1u << 20;

// GPT-2's byte-to-character table: printable bytes map to themselves, the others to U+0100 onward,
// so every byte sequence becomes printable text.
std::string byte_to_symbol(uint8_t byte) {
  uint32_t code_point = byte;
  const bool printable =
      (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE);
  if (!printable) {
    uint32_t n = 0;
    for (uint32_t b = 0; b < byte; ++b) {
      const bool p = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      if (!p) ++n;
    }
    code_point = 256 + n;
  }
  std::string out;
  if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else {  // all code points here are below U+0800: two UTF-8 bytes
    out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
  return out;
}

// Splits text into training words: an optional leading space followed by a run of letters, digits
// or other symbols; whitespace runs stand alone.
std::vector<std::string> training_words(std::string_view text) {
  auto kind = [](char c) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalpha(u)) return 1;
    if (std::isdigit(u)) return 2;
    if (std::isspace(u)) return 3;
    return 4;
  };
  std::vector<std::string> words;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    if (text[i] == ' ' && i + 1 < text.size() && kind(text[i + 1]) != 3) ++i;
    const int k = kind(text[i]);
    while (i < text.size() && kind(text[i]) == k) ++i;
    words.emplace_back(text.substr(start, i - start));
  }
  return words;
}

}  // namespace

Result<SyntheticVocab> make_byte_level_bpe_vocab(uint32_t n_vocab) {
  static constexpr const char* kSpecial[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  constexpr uint32_t kSpecialCount = 3;
  if (n_vocab < 256 + kSpecialCount) {
    return Status(ErrorCode::kInvalidArgument,
                  "a byte-level BPE vocabulary needs at least 259 tokens (256 bytes + 3 control)");
  }
  SyntheticVocab vocab;
  std::set<std::string> known;
  for (int b = 0; b < 256; ++b) {
    vocab.tokens.push_back(byte_to_symbol(static_cast<uint8_t>(b)));
    vocab.token_types.push_back(kTokenTypeNormal);
    known.insert(vocab.tokens.back());
  }
  // Each distinct word with its count, as a list of symbols.
  std::map<std::string, int> counts;
  for (const std::string& w : training_words(synthetic_corpus())) ++counts[w];
  std::vector<std::pair<std::vector<std::string>, int>> words;
  for (const auto& [text, count] : counts) {
    std::vector<std::string> symbols;
    for (char c : text) symbols.push_back(byte_to_symbol(static_cast<uint8_t>(c)));
    words.emplace_back(std::move(symbols), count);
  }
  const uint32_t n_normal = n_vocab - kSpecialCount;
  while (vocab.tokens.size() < n_normal) {
    // Most frequent adjacent pair; ties broken by the pair's text so the result is deterministic.
    std::map<std::pair<std::string, std::string>, int> pairs;
    for (const auto& [symbols, count] : words) {
      for (size_t i = 0; i + 1 < symbols.size(); ++i) pairs[{symbols[i], symbols[i + 1]}] += count;
    }
    const std::pair<std::string, std::string>* best = nullptr;
    int best_count = 0;
    for (const auto& [pair, count] : pairs) {
      if (count > best_count && !known.contains(pair.first + pair.second)) {
        best = &pair;
        best_count = count;
      }
    }
    if (best == nullptr) {
      if (n_vocab > kMaxSyntheticVocab) {
        return Status(ErrorCode::kInvalidArgument, "a synthetic vocabulary holds at most " +
                                                       std::to_string(kMaxSyntheticVocab) +
                                                       " tokens");
      }
      for (uint32_t i = 0; vocab.tokens.size() < n_normal; ++i) {
        vocab.tokens.push_back("<unused_" + std::to_string(i) + ">");
        vocab.token_types.push_back(kTokenTypeUnused);
      }
      break;
    }
    const std::string merged = best->first + best->second;
    vocab.merges.push_back(best->first + " " + best->second);
    vocab.tokens.push_back(merged);
    vocab.token_types.push_back(kTokenTypeNormal);
    known.insert(merged);
    const std::pair<std::string, std::string> chosen = *best;
    for (auto& [symbols, count] : words) {
      std::vector<std::string> next;
      for (size_t i = 0; i < symbols.size(); ++i) {
        if (i + 1 < symbols.size() && symbols[i] == chosen.first &&
            symbols[i + 1] == chosen.second) {
          next.push_back(merged);
          ++i;
        } else {
          next.push_back(symbols[i]);
        }
      }
      symbols = std::move(next);
    }
  }
  for (const char* special : kSpecial) {
    vocab.tokens.emplace_back(special);
    vocab.token_types.push_back(kTokenTypeControl);
  }
  return vocab;
}

Result<SyntheticVocab> make_wordpiece_vocab(uint32_t n_vocab) {
  SyntheticVocab vocab;
  for (const char* special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
    vocab.tokens.emplace_back(special);
    vocab.token_types.push_back(kTokenTypeControl);
  }
  std::vector<std::string> candidates;
  const std::string characters = "abcdefghijklmnopqrstuvwxyz0123456789.,!?;:'\"()-_=+*/#[]";
  for (char c : characters) candidates.emplace_back(1, c);
  for (char c : std::string_view("abcdefghijklmnopqrstuvwxyz0123456789")) {
    candidates.push_back(std::string("##") + c);
  }
  // Then the corpus's words, most frequent first (ties alphabetical), lower-cased as BERT does.
  std::map<std::string, int> counts;
  std::string word;
  for (char c : synthetic_corpus()) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalpha(u)) {
      word.push_back(static_cast<char>(std::tolower(u)));
    } else if (!word.empty()) {
      ++counts[word];
      word.clear();
    }
  }
  std::vector<std::pair<std::string, int>> ranked(counts.begin(), counts.end());
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (const auto& [w, count] : ranked) {
    if (w.size() > 1) candidates.push_back(w);
  }
  if (n_vocab < vocab.tokens.size() + characters.size()) {
    return Status(ErrorCode::kInvalidArgument,
                  "a WordPiece vocabulary needs at least " +
                      std::to_string(vocab.tokens.size() + characters.size()) + " tokens");
  }
  if (n_vocab > vocab.tokens.size() + candidates.size()) {
    return Status(ErrorCode::kInvalidArgument,
                  "the built-in corpus supports at most " +
                      std::to_string(vocab.tokens.size() + candidates.size()) +
                      " WordPiece tokens; use --vocab-from for a larger vocabulary");
  }
  for (size_t i = 0; vocab.tokens.size() < n_vocab; ++i) {
    vocab.tokens.push_back(candidates[i]);
    vocab.token_types.push_back(kTokenTypeNormal);
  }
  return vocab;
}

Status write_byte_level_bpe_vocab(const SyntheticVocab& vocab, GgufWriter& w) {
  const auto n = static_cast<uint32_t>(vocab.tokens.size());
  SYN_RETURN_IF_ERROR(w.set_string(gguf_key::kTokenizerModel, "gpt2"));
  SYN_RETURN_IF_ERROR(w.set_string(gguf_key::kTokenizerPre, "qwen2"));
  SYN_RETURN_IF_ERROR(w.set(gguf_key::kTokenizerTokens, GgufValue::string_array(vocab.tokens)));
  SYN_RETURN_IF_ERROR(w.set(gguf_key::kTokenizerTokenType, GgufValue::array(vocab.token_types)));
  SYN_RETURN_IF_ERROR(w.set(gguf_key::kTokenizerMerges, GgufValue::string_array(vocab.merges)));
  // The last three tokens are <|endoftext|>, <|im_start|>, <|im_end|>.
  SYN_RETURN_IF_ERROR(w.set_scalar(gguf_key::kTokenizerBosId, n - 3));
  SYN_RETURN_IF_ERROR(w.set_scalar(gguf_key::kTokenizerEosId, n - 1));
  SYN_RETURN_IF_ERROR(w.set_scalar(gguf_key::kTokenizerPaddingId, n - 3));
  SYN_RETURN_IF_ERROR(w.set_scalar(gguf_key::kTokenizerAddBos, false));
  return w.set_string(gguf_key::kChatTemplate,
                      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
                      "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if "
                      "add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}");
}

Status write_wordpiece_vocab(const SyntheticVocab& vocab, GgufWriter& w) {
  SYN_RETURN_IF_ERROR(w.set_string(gguf_key::kTokenizerModel, "bert"));
  SYN_RETURN_IF_ERROR(w.set(gguf_key::kTokenizerTokens, GgufValue::string_array(vocab.tokens)));
  SYN_RETURN_IF_ERROR(w.set(gguf_key::kTokenizerTokenType, GgufValue::array(vocab.token_types)));
  SYN_RETURN_IF_ERROR(w.set_scalar(gguf_key::kTokenizerPaddingId, uint32_t{0}));
  SYN_RETURN_IF_ERROR(w.set_scalar(gguf_key::kTokenizerUnknownId, uint32_t{1}));
  SYN_RETURN_IF_ERROR(w.set_scalar(gguf_key::kTokenizerClsId, uint32_t{2}));
  SYN_RETURN_IF_ERROR(w.set_scalar(gguf_key::kTokenizerSeparatorId, uint32_t{3}));
  return w.set_scalar(gguf_key::kTokenizerMaskId, uint32_t{4});
}

}  // namespace synapse
