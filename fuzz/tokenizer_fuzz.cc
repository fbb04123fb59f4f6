// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the tokenizers. The first input byte picks what to exercise, the rest is
// the payload:
//   0..kTokenizers-1   encode the payload as text with one tokenizer (the fixture vocabularies
//                      when present, else synthetic byte-level BPE and WordPiece ones), with the
//                      options in the byte's high bits; every id must be in range, byte-level BPE
//                      must round-trip exactly (decode(encode(x)) == x, invalid UTF-8 included;
//                      for Qwen2, which NFC-normalizes, x is first normalized by a round trip),
//                      SentencePiece too for text without "▁" or special tokens, and streaming
//                      detokenization must equal decode.
//   kDecodeIds         read the payload as int32 ids and decode them (out-of-range ids are an
//                      error, never a crash).
//   kHfJson            load the payload as a tokenizer.json (malformed input is an error).
// A broken property aborts, which libFuzzer reports as a crash.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/utf8.h"
#include "format/gguf/gguf_file.h"
#include "format/gguf/gguf_writer.h"
#include "synth/synthetic_vocab.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace synapse {
namespace {

using tokenizer::TokenId;
using tokenizer::Tokenizer;

[[noreturn]] void violated(const char* what, std::string_view input) {
  std::fprintf(stderr, "tokenizer_fuzz: property violated: %s (input of %zu bytes)\n", what,
               input.size());
  std::abort();
}

std::string fixtures_dir() {
  const char* dir = std::getenv("SYNAPSE_FIXTURES");
  return dir != nullptr ? dir : SYNAPSE_FIXTURES_DEFAULT;
}

std::unique_ptr<Tokenizer> from_gguf_file(const std::string& path) {
  auto file = GgufFile::open(path);
  if (!file.ok()) return nullptr;
  auto tok = Tokenizer::from_gguf(file->metadata());
  if (!tok.ok()) return nullptr;
  return std::make_unique<Tokenizer>(std::move(tok).value());
}

// A synthetic vocabulary written to GGUF bytes and read back, so the fuzzer runs without
// fixtures too.
std::unique_ptr<Tokenizer> synthetic(bool wordpiece) {
  auto vocab = wordpiece ? make_wordpiece_vocab(160) : make_byte_level_bpe_vocab(320);
  if (!vocab.ok()) return nullptr;
  GgufWriter writer;
  const Status written = wordpiece ? write_wordpiece_vocab(*vocab, writer)
                                   : write_byte_level_bpe_vocab(*vocab, writer);
  if (!written.ok()) return nullptr;
  auto bytes = writer.write_to_buffer();
  if (!bytes.ok()) return nullptr;
  static std::vector<std::vector<uint8_t>> keep_alive;  // GgufFile::parse views these bytes
  keep_alive.push_back(std::move(bytes).value());
  auto file = GgufFile::parse(keep_alive.back(), "synthetic");
  if (!file.ok()) return nullptr;
  auto tok = Tokenizer::from_gguf(file->metadata());
  if (!tok.ok()) return nullptr;
  return std::make_unique<Tokenizer>(std::move(tok).value());
}

// A tokenizer and the bytes it can round-trip on their own: every byte has a byte token in
// GPT-2-style vocabularies, but deepseek's stand for C0, C1 and F5..FF with user-defined tokens
// that decode as the text they match ("õ"), so input holding those bytes cannot round-trip.
struct Subject {
  std::unique_ptr<Tokenizer> tok;
  std::array<bool, 256> faithful{};
};

const std::vector<Subject>& subjects() {
  static const std::vector<Subject> all = [] {
    std::vector<std::unique_ptr<Tokenizer>> list;
    for (const char* name :
         {"qwen2-vocab.gguf", "ggml-vocab-llama-spm.gguf", "ggml-vocab-bert-bge.gguf",
          "ggml-vocab-deepseek-llm.gguf", "ggml-vocab-phi-3.gguf", "ggml-vocab-falcon.gguf"}) {
      if (auto tok = from_gguf_file(fixtures_dir() + "/tokenizer/vocab/" + name)) {
        list.push_back(std::move(tok));
      }
    }
    for (const bool wordpiece : {false, true}) {
      if (auto tok = synthetic(wordpiece)) list.push_back(std::move(tok));
    }
    if (list.empty()) violated("no tokenizer could be built", {});
    std::fprintf(stderr, "tokenizer_fuzz: %zu tokenizers\n", list.size());
    std::vector<Subject> result;
    for (auto& tok : list) {
      Subject subject{std::move(tok), {}};
      for (int b = 0; b < 256; ++b) {
        const std::string one(1, static_cast<char>(b));
        const auto back = subject.tok->decode(subject.tok->encode(one, {false, false}));
        subject.faithful[static_cast<size_t>(b)] = back.ok() && *back == one;
      }
      result.push_back(std::move(subject));
    }
    return result;
  }();
  return all;
}

void check_encode(const Tokenizer& tok, const std::array<bool, 256>* faithful,
                  std::string_view text, uint8_t flags) {
  const bool parse_special = (flags & 1) != 0;
  const bool add_special = (flags & 2) != 0;
  const std::vector<TokenId> ids = tok.encode(text, {add_special, parse_special});
  for (const TokenId id : ids) {
    if (!tok.vocab().contains(id)) violated("id out of range", text);
  }
  const tokenizer::DecodeOptions options{.render_special = true};
  auto decoded = tok.decode(ids, options);
  if (!decoded.ok()) violated("decode of encoded ids failed", text);
  tokenizer::StreamingDetokenizer stream(tok, options);
  std::string streamed;
  for (const TokenId id : ids) {
    if (!stream.push(id, streamed).ok()) violated("streaming push failed", text);
  }
  stream.finish(streamed);
  if (streamed != *decoded) violated("streaming differs from decode", text);
  if (add_special) return;  // BOS/EOS text is not part of the input
  bool all_faithful = faithful != nullptr;
  for (size_t i = 0; all_faithful && i < text.size(); ++i) {
    all_faithful = (*faithful)[static_cast<uint8_t>(text[i])];
  }
  if (!all_faithful) return;
  if (tok.kind() == tokenizer::TokenizerKind::kByteLevelBpe) {
    // An NFC-normalizing vocabulary (Qwen2) returns the normalized text; that text round-trips.
    const std::string_view expected = tok.normalizes() ? std::string_view(*decoded) : text;
    const auto again = tok.decode(tok.encode(expected, {false, parse_special}), options);
    if (!again.ok() || *again != expected) violated("byte-level BPE does not round-trip", text);
    if (tok.normalizes() && is_valid_utf8(text)) {
      std::string normalized;
      if (tokenizer::nfc(text, normalized) && normalized == text && *decoded != text) {
        violated("NFC text does not round-trip", text);
      }
    }
  } else if (tok.kind() == tokenizer::TokenizerKind::kSentencePiece && !parse_special &&
             text.find("\xE2\x96\x81") == std::string_view::npos) {
    if (*decoded != text) violated("SentencePiece does not round-trip", text);
  }
}

}  // namespace
}  // namespace synapse

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace synapse;
  if (size == 0) return 0;
  const auto& all = subjects();
  const uint8_t selector = data[0];
  const std::string_view payload(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t n = all.size();
  const size_t mode = (selector & 0x0F) % (n + 2);
  if (mode < n) {
    check_encode(*all[mode].tok, &all[mode].faithful, payload, static_cast<uint8_t>(selector >> 4));
  } else if (mode == n) {
    std::vector<TokenId> ids(payload.size() / sizeof(TokenId));
    if (!ids.empty()) std::memcpy(ids.data(), payload.data(), ids.size() * sizeof(TokenId));
    const tokenizer::Tokenizer& tok = *all[(selector >> 4) % n].tok;
    auto text = tok.decode(ids);
    bool in_range = true;
    for (const TokenId id : ids) in_range = in_range && tok.vocab().contains(id);
    if (text.ok() != in_range) violated("decode must fail exactly for out-of-range ids", payload);
  } else {
    auto tok = tokenizer::Tokenizer::from_hf_json(payload, "fuzz input");
    if (tok.ok()) check_encode(*tok, nullptr, "Hello world, 123 \xC3\xA9\xFF", 0);
  }
  return 0;
}
