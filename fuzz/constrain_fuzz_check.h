// SPDX-License-Identifier: Apache-2.0
// What the constrained-decoding fuzz targets (gbnf_fuzz, json_schema_fuzz) do with a grammar that
// compiled: match texts, and compare the token masks with feeding every token, so that a crash,
// a hang or a wrong mask anywhere in src/constrain shows up, not only in the front end.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "constrain/grammar.h"
#include "constrain/matcher.h"
#include "constrain/token_masker.h"
#include "constrain/token_trie.h"
#include "format/gguf/gguf_file.h"
#include "format/gguf/gguf_writer.h"
#include "synth/synthetic_vocab.h"
#include "tokenizer/tokenizer.h"

namespace synapse::fuzz {

// Errors a grammar front end may answer with; anything else is a bug.
inline bool is_grammar_error(ErrorCode code) {
  return code == ErrorCode::kInvalidGrammar || code == ErrorCode::kUnsupportedSchema ||
         code == ErrorCode::kSchemaTooComplex;
}

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "constrain fuzz check failed: %s\n", what.c_str());
  std::abort();
}

// A small byte-level BPE vocabulary (every byte is a token, plus merges), built once.
inline const std::shared_ptr<const constrain::TokenTrie>& synthetic_trie() {
  static const std::shared_ptr<const constrain::TokenTrie> trie = [] {
    auto vocab = make_byte_level_bpe_vocab(320);
    if (!vocab.ok()) fail("synthetic vocabulary: " + vocab.status().to_string());
    GgufWriter writer;
    if (Status s = write_byte_level_bpe_vocab(*vocab, writer); !s.ok()) fail(s.to_string());
    auto bytes = writer.write_to_buffer();
    if (!bytes.ok()) fail(bytes.status().to_string());
    // GgufFile::parse views the bytes; the tokenizer copies what it needs.
    static const std::vector<uint8_t> kept = std::move(bytes).value();
    auto file = GgufFile::parse(kept, "synthetic");
    if (!file.ok()) fail(file.status().to_string());
    auto tok = tokenizer::Tokenizer::from_gguf(file->metadata());
    if (!tok.ok()) fail(tok.status().to_string());
    std::vector<tokenizer::TokenId> end_tokens;
    if (tok->vocab().special().eos != tokenizer::kNoToken) {
      end_tokens.push_back(tok->vocab().special().eos);
    }
    return std::make_shared<const constrain::TokenTrie>(
        constrain::TokenTrie::from_tokenizer(*tok, std::move(end_tokens)));
  }();
  return trie;
}

// Matches each text twice (the second time after rolling the whole text back), and along the
// longest prefix of the first text the grammar allows, checks at up to `mask_steps` positions
// that the mask allows exactly the tokens whose bytes the matcher takes.
inline void check_grammar(constrain::Grammar grammar, const std::vector<std::string>& texts,
                          size_t mask_steps) {
  const auto shared = std::make_shared<const constrain::Grammar>(std::move(grammar));
  for (const std::string& text : texts) {
    constrain::Matcher m(shared);
    const bool first = m.consume_bytes(text) && m.accepts_end();
    m.rollback_bytes(m.consumed_bytes());
    const bool second = m.consume_bytes(text) && m.accepts_end();
    if (first != second) fail("a text matched differently after a rollback: " + text);
    if (first != constrain::grammar_accepts(shared, text)) fail("grammar_accepts disagrees");
  }
  if (texts.empty() || mask_steps == 0) return;

  const auto& trie = synthetic_trie();
  constrain::TokenMasker masker(shared, trie);
  constrain::Matcher m = masker.new_matcher();
  std::vector<uint64_t> mask(masker.mask_words());
  const std::string& text = texts.front();
  for (size_t pos = 0; pos < mask_steps; ++pos) {
    std::fill(mask.begin(), mask.end(), 0);
    masker.compute_mask(m, mask);
    for (size_t t = 0; t < trie->vocab_size(); ++t) {
      const auto id = static_cast<tokenizer::TokenId>(t);
      bool expected = false;
      if (trie->in_trie(id)) {
        const std::string& bytes = trie->token_bytes(id);
        expected = m.consume_bytes(bytes);
        if (expected) m.rollback_bytes(bytes.size());
      }
      for (const tokenizer::TokenId end : trie->end_tokens()) {
        if (end == id) expected = m.accepts_end();
      }
      const bool allowed = ((mask[t >> 6] >> (t & 63)) & 1) != 0;
      if (allowed != expected) {
        fail("mask bit of token " + std::to_string(t) + " is " + std::to_string(allowed) +
             " after " + std::to_string(pos) + " bytes of: " + text);
      }
    }
    if (pos >= text.size() || !m.consume_bytes(text.substr(pos, 1))) break;
  }
}

}  // namespace synapse::fuzz
