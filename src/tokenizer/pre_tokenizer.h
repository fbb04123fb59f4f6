// SPDX-License-Identifier: Apache-2.0
// Pre-tokenizers of byte-level BPE vocabularies: a sequence of regex splits with the Hugging Face
// "Isolated" behaviour (each match is a piece, and so is each gap between matches), applied one
// after the other to every piece, plus the options that travel with a pre-tokenizer name
// (NFC normalization, ignore_merges). The table of names is data: adding a pre-tokenizer is one
// entry in pre_tokenizer.cc.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/regex.h"

namespace synapse::tokenizer {

struct PreTokenizerSpec {
  std::string_view name;
  std::vector<std::string_view> patterns;  // applied in order, each splitting every piece again
  bool nfc = false;                        // the original tokenizer NFC-normalizes the text first
  bool ignore_merges = false;              // a whole piece that is a token is taken as is (Llama 3)
};

// The spec for a `tokenizer.ggml.pre` name, or unsupported naming the known ones.
Result<PreTokenizerSpec> find_pre_tokenizer(std::string_view name);
// Every name the table knows, for messages and tests.
std::vector<std::string_view> pre_tokenizer_names();

class PreTokenizer {
 public:
  static Result<PreTokenizer> compile(std::span<const std::string> patterns);
  static Result<PreTokenizer> compile(const PreTokenizerSpec& spec);

  // Calls `emit(piece)` for consecutive pieces covering `text` exactly, in order. `text` must be
  // valid UTF-8. `scratch` holds piece boundaries between passes (kept by the caller so that
  // encoding a corpus does not allocate per call).
  template <typename Emit>
  void split(std::string_view text, std::vector<size_t>& scratch, Emit&& emit) const;

 private:
  void split_bounds(std::string_view text, std::vector<size_t>& bounds) const;
  std::vector<Regex> regexes_;
};

template <typename Emit>
void PreTokenizer::split(std::string_view text, std::vector<size_t>& scratch, Emit&& emit) const {
  split_bounds(text, scratch);
  for (size_t i = 0; i + 1 < scratch.size(); ++i) {
    emit(text.substr(scratch[i], scratch[i + 1] - scratch[i]));
  }
}

}  // namespace synapse::tokenizer
