// SPDX-License-Identifier: Apache-2.0
// Small deterministic vocabularies for synthetic models, written as GGUF tokenizer metadata:
// a byte-level BPE (GPT-2 style: 256 byte tokens, merges learned from a built-in text, ChatML
// control tokens; pre-tokenizer "qwen2") and a WordPiece vocabulary for BERT models.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/gguf/gguf_writer.h"

namespace synapse {

struct SyntheticVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> token_types;  // llama.cpp's: 1 normal, 3 control
  std::vector<std::string> merges;   // BPE only: "left right"
};

// Byte-level BPE with exactly n_vocab tokens (at least 259: 256 bytes + 3 control tokens).
Result<SyntheticVocab> make_byte_level_bpe_vocab(uint32_t n_vocab);
// WordPiece with exactly n_vocab tokens (at least 5 special tokens plus the characters).
Result<SyntheticVocab> make_wordpiece_vocab(uint32_t n_vocab);

// Writes tokenizer.ggml.* (and a ChatML chat template for BPE) for the vocabulary.
Status write_byte_level_bpe_vocab(const SyntheticVocab& vocab, GgufWriter& writer);
Status write_wordpiece_vocab(const SyntheticVocab& vocab, GgufWriter& writer);

// The text the synthetic vocabularies are learned from (also handy as a test prompt).
std::string_view synthetic_corpus();

}  // namespace synapse
