// SPDX-License-Identifier: Apache-2.0
#include "tokenizer/pre_tokenizer.h"

namespace synapse::tokenizer {
namespace {

// The patterns are those of the original tokenizers (Hugging Face tokenizer.json) in the form
// llama.cpp uses for the same `tokenizer.ggml.pre` names; its test pairs pass with them.
constexpr std::string_view kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kCjk = "[\\x{4E00}-\\x{9FA5}\\x{0800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+";
// Cased letters (Lu, Ll, Lt) as deepseek-llm's tokenizer.json lists them, by code point: some of
// them (U+1FD3, U+2126, U+212A ...) are not NFC-stable, so writing the characters themselves
// would let an editor change the pattern.
constexpr std::string_view kDeepseekLlmLetters =
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"
    "\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}"
    "\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}\\x{3F7}-"
    "\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}"
    "\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}\\x{1D6B}-"
    "\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}"
    "\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}"
    "\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}"
    "\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-"
    "\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}"
    "\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}"
    "\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}"
    "\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-"
    "\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}"
    "\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}"
    "-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-"
    "\\x{118DF}\\x{1E900}-\\x{1E943}]+";
constexpr std::string_view kDeepseekLlmPunct =
    "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+";
constexpr std::string_view kFalconPunct = "[\\p{P}\\$\\+<=>\\^~\\|`]+";
constexpr std::string_view kGpt2NoTail =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";

const std::vector<PreTokenizerSpec>& table() {
  static const std::vector<PreTokenizerSpec> kTable = {
      // llama.cpp's choice for a byte-level vocabulary that names no pre-tokenizer.
      {"default", {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2NoTail, "\\p{N}+", "[0-9][0-9][0-9]"}},
      {"gpt-2", {kGpt2}},
      {"mpt", {kGpt2}},
      {"llama-bpe", {kLlama3}, false, true},
      // Vocabularies llama.cpp splits exactly as Llama 3's (llama-vocab.cpp's LLAMA3 group):
      // the same pattern, whole pieces that are tokens taken as is.
      {"llama3", {kLlama3}, false, true},
      {"llama-v3", {kLlama3}, false, true},
      {"falcon3", {kLlama3}, false, true},
      {"pixtral", {kLlama3}, false, true},
      {"lfm2", {kLlama3}, false, true},
      {"qwen2", {kQwen2}, true},
      {"deepseek-llm",
       {"[\\r\\n]", kDeepseekLlmLetters, kDeepseekLlmPunct, "\\s+$", kCjk, "\\p{N}+"}},
      {"deepseek-coder", {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjk, "\\p{N}"}},
      {"falcon", {kFalconPunct, kGpt2NoTail, "[0-9][0-9][0-9]"}},
      {"starcoder", {"\\p{N}", kGpt2NoTail}},
      {"refact", {"\\p{N}", kGpt2NoTail}},
  };
  return kTable;
}

}  // namespace

Result<PreTokenizerSpec> find_pre_tokenizer(std::string_view name) {
  for (const PreTokenizerSpec& spec : table()) {
    if (spec.name == name) return spec;
  }
  std::string known;
  for (const PreTokenizerSpec& spec : table())
    known += (known.empty() ? "" : ", ") + std::string(spec.name);
  return Status(ErrorCode::kUnsupported,
                "unknown pre-tokenizer '" + std::string(name) + "' (supported: " + known + ")");
}

std::vector<std::string_view> pre_tokenizer_names() {
  std::vector<std::string_view> names;
  for (const PreTokenizerSpec& spec : table()) names.push_back(spec.name);
  return names;
}

Result<PreTokenizer> PreTokenizer::compile(std::span<const std::string> patterns) {
  PreTokenizer pre;
  for (const std::string& pattern : patterns) {
    SYN_ASSIGN_OR_RETURN(Regex regex, Regex::compile(pattern));
    pre.regexes_.push_back(std::move(regex));
  }
  return pre;
}

Result<PreTokenizer> PreTokenizer::compile(const PreTokenizerSpec& spec) {
  std::vector<std::string> patterns(spec.patterns.begin(), spec.patterns.end());
  return compile(patterns);
}

void PreTokenizer::split_bounds(std::string_view text, std::vector<size_t>& bounds) const {
  bounds.clear();
  bounds.push_back(0);
  if (!text.empty()) bounds.push_back(text.size());
  if (regexes_.empty() || text.empty()) return;
  // Each pass refines every piece of the previous one; pieces are [bounds[i], bounds[i+1]).
  std::vector<size_t> next;
  for (const Regex& regex : regexes_) {
    next.clear();
    next.push_back(0);
    for (size_t i = 0; i + 1 < bounds.size(); ++i) {
      const std::string_view piece = text.substr(bounds[i], bounds[i + 1] - bounds[i]);
      size_t pos = 0, begin = 0, end = 0;
      while (pos < piece.size() && regex.find(piece, pos, begin, end)) {
        if (begin > pos) next.push_back(bounds[i] + begin);  // the gap before the match
        next.push_back(bounds[i] + end);
        pos = end;
      }
      if (pos < piece.size()) next.push_back(bounds[i + 1]);
    }
    bounds.swap(next);
  }
}

}  // namespace synapse::tokenizer
