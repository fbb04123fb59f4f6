// SPDX-License-Identifier: Apache-2.0
// Whole-corpus tokenizer parity: every case under fixtures/tokenizer/ must give exactly the
// reference ids. Cases are data: llama.cpp's .inp/.out pairs per vocabulary, the corpus JSONL
// files (ids_hf, where present, is the original tokenizer's answer and wins over llama.cpp's
// ids), and the Qwen3 tokenizer.json corpus. For byte-level BPE, decode(encode(x)) == x too.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "format/gguf/gguf_file.h"
#include "tests/support/test_support.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace synapse {
namespace {

using Json = nlohmann::json;
using tokenizer::EncodeOptions;
using tokenizer::TokenId;
using tokenizer::Tokenizer;

struct Case {
  std::string name;
  std::string text;
  bool parse_special = false;
  std::vector<TokenId> expected;
};

std::vector<Case> read_inp_out(const std::string& inp_path, const std::string& out_path) {
  const std::string inp = testing::read_file_text(inp_path);
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < inp.size();) {
    const size_t end = inp.find(separator, pos);
    if (end == std::string::npos) break;
    texts.push_back(inp.substr(pos, end - pos));
    pos = end + separator.size();
  }
  std::istringstream out(testing::read_file_text(out_path));
  std::vector<Case> cases;
  std::string line;
  for (size_t i = 0; i < texts.size() && std::getline(out, line); ++i) {
    Case c{"inp#" + std::to_string(i), texts[i], false, {}};
    std::istringstream ids(line);
    for (TokenId id = 0; ids >> id;) c.expected.push_back(id);
    cases.push_back(std::move(c));
  }
  EXPECT_EQ(cases.size(), texts.size()) << out_path << " and " << inp_path << " differ in count";
  return cases;
}

std::vector<Case> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  std::vector<Case> cases;
  std::string line;
  for (size_t i = 0; std::getline(in, line); ++i) {
    if (line.empty()) continue;
    const Json r = Json::parse(line);
    Case c;
    c.name = r.value("id", "line " + std::to_string(i + 1));
    c.text = r["text"].get<std::string>();
    c.parse_special = r.value("parse_special", false);
    c.expected = (r.contains("ids_hf") ? r["ids_hf"] : r["ids"]).get<std::vector<TokenId>>();
    cases.push_back(std::move(c));
  }
  return cases;
}

std::string show(const std::vector<TokenId>& ids) {
  std::string s;
  for (const TokenId id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
  return s;
}

// Runs every case; returns the number that differ (and reports the first few).
size_t check_cases(const Tokenizer& tok, const std::vector<Case>& cases, const std::string& what) {
  size_t failed = 0;
  tokenizer::EncodeScratch scratch;
  std::vector<TokenId> ids;
  for (const Case& c : cases) {
    ids.clear();
    tok.encode(c.text, EncodeOptions{.add_special = false, .parse_special = c.parse_special},
               scratch, ids);
    if (ids != c.expected) {
      if (++failed <= 5) {
        ADD_FAILURE() << what << " " << c.name << ": text " << Json(c.text).dump()
                      << "\n  expected " << show(c.expected) << "\n  got      " << show(ids);
      }
    }
    // Byte-level BPE round-trips every text exactly (special tokens included when parsed).
    if (tok.kind() == tokenizer::TokenizerKind::kByteLevelBpe) {
      const auto decoded = tok.decode(ids, {.render_special = true});
      EXPECT_TRUE(decoded.ok() && *decoded == c.text) << what << " " << c.name << " round trip";
      tokenizer::StreamingDetokenizer stream(tok, {.render_special = true});
      std::string streamed;
      for (const TokenId id : ids) EXPECT_TRUE(stream.push(id, streamed).ok());
      stream.finish(streamed);
      EXPECT_EQ(streamed, c.text) << what << " " << c.name << " streaming";
    }
  }
  std::printf("%-28s %4zu cases, %zu differ\n", what.c_str(), cases.size(), failed);
  return failed;
}

struct VocabFixture {
  const char* corpus;  // corpus/<name>.jsonl
  const char* gguf;    // vocab/<file>
};

constexpr VocabFixture kVocabs[] = {
    {"bert-bge", "ggml-vocab-bert-bge.gguf"},
    {"deepseek-coder", "ggml-vocab-deepseek-coder.gguf"},
    {"deepseek-llm", "ggml-vocab-deepseek-llm.gguf"},
    {"falcon", "ggml-vocab-falcon.gguf"},
    {"gpt-2", "ggml-vocab-gpt-2.gguf"},
    {"llama-spm", "ggml-vocab-llama-spm.gguf"},
    {"mpt", "ggml-vocab-mpt.gguf"},
    {"phi-3", "ggml-vocab-phi-3.gguf"},
    {"refact", "ggml-vocab-refact.gguf"},
    {"starcoder", "ggml-vocab-starcoder.gguf"},
    {"qwen2", "qwen2-vocab.gguf"},
    {"llama3", "llama3-vocab.gguf"},
};

class VocabParity : public ::testing::TestWithParam<VocabFixture> {};

TEST_P(VocabParity, LlamaCppPairsAndCorpus) {
  const VocabFixture& v = GetParam();
  const std::string vocab_rel = std::string("tokenizer/vocab/") + v.gguf;
  SYN_REQUIRE_FIXTURE(gguf_path, vocab_rel);
  SYN_REQUIRE_FIXTURE(inp, vocab_rel + ".inp");
  SYN_REQUIRE_FIXTURE(out, vocab_rel + ".out");
  SYN_REQUIRE_FIXTURE(corpus, std::string("tokenizer/corpus/") + v.corpus + ".jsonl");
  auto file = GgufFile::open(gguf_path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto tok = Tokenizer::from_gguf(file->metadata());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ(check_cases(*tok, read_inp_out(inp, out), std::string(v.corpus) + " .inp/.out"), 0u);
  EXPECT_EQ(check_cases(*tok, read_jsonl(corpus), std::string(v.corpus) + " corpus"), 0u);
}

INSTANTIATE_TEST_SUITE_P(AllVocabularies, VocabParity, ::testing::ValuesIn(kVocabs),
                         [](const ::testing::TestParamInfo<VocabFixture>& param_info) {
                           std::string name = param_info.param.corpus;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

TEST(HfJsonParity, Qwen3CorpusAndLlamaCppPairs) {
  SYN_REQUIRE_FIXTURE(json, "tokenizer/hf/qwen3/tokenizer.json");
  SYN_REQUIRE_FIXTURE(corpus, "tokenizer/hf/qwen3/corpus_ids.jsonl");
  SYN_REQUIRE_FIXTURE(inp, "tokenizer/vocab/qwen2-vocab.gguf.inp");
  SYN_REQUIRE_FIXTURE(out, "tokenizer/vocab/qwen2-vocab.gguf.out");
  auto tok = Tokenizer::from_hf_json_file(json);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  // tokenizers.js always matches added tokens: parse_special on.
  std::vector<Case> cases = read_jsonl(corpus);
  for (Case& c : cases) c.parse_special = true;
  EXPECT_EQ(check_cases(*tok, cases, "qwen3 tokenizer.json"), 0u);
  EXPECT_EQ(check_cases(*tok, read_inp_out(inp, out), "qwen3 json on qwen2 pairs"), 0u);
}

TEST(HfJsonParity, BertBgeCorpus) {
  SYN_REQUIRE_FIXTURE(json, "tokenizer/hf/bert-bge/tokenizer.json");
  SYN_REQUIRE_FIXTURE(corpus, "tokenizer/corpus/bert-bge.jsonl");
  auto tok = Tokenizer::from_hf_json_file(json);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ(check_cases(*tok, read_jsonl(corpus), "bert-bge tokenizer.json"), 0u);
}

}  // namespace
}  // namespace synapse
