// SPDX-License-Identifier: Apache-2.0
#include "request/output_constraints.h"

#include <gtest/gtest.h>

#include "format/gguf/gguf_file.h"
#include "tests/support/test_support.h"

namespace synapse::request {
namespace {

tokenizer::Tokenizer llama3_tokenizer(const std::string& path) {
  auto file = GgufFile::open(path);
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  auto tok = tokenizer::Tokenizer::from_gguf(file->metadata());
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return std::move(*tok);
}

bool accepts(OutputConstraints& constraints, const api::OutputFormat& format,
             const std::string& text) {
  auto compiled = constraints.for_format(format);
  EXPECT_TRUE(compiled.ok()) << compiled.status().to_string();
  if (!compiled.ok() || !compiled->masker) return false;
  constrain::Matcher matcher = compiled->masker->new_matcher();
  return matcher.consume_bytes(text) && matcher.accepts_end();
}

// `synapse serve --json-whitespace flexible` lets JSON have blanks between its tokens, in
// response formats; the default is compact.
TEST(OutputConstraints, WhitespaceIsCompactUnlessFlexible) {
  SYN_REQUIRE_FIXTURE(vocab, "tokenizer/vocab/llama3-vocab.gguf");
  const tokenizer::Tokenizer tok = llama3_tokenizer(vocab);
  api::OutputFormat schema;
  schema.kind = api::OutputFormat::Kind::kJsonSchema;
  schema.schema = nlohmann::ordered_json::parse(
      R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})");
  api::OutputFormat object;
  object.kind = api::OutputFormat::Kind::kJsonObject;
  OutputConstraints compact(tok, chat::TemplateFamily::kUnknown);
  OutputConstraints flexible(tok, chat::TemplateFamily::kUnknown, /*flexible_whitespace=*/true);
  for (const api::OutputFormat* format : {&schema, &object}) {
    EXPECT_TRUE(accepts(compact, *format, R"({"a":1})"));
    EXPECT_FALSE(accepts(compact, *format, "{ \"a\" : 1 }"));
    EXPECT_TRUE(accepts(flexible, *format, R"({"a":1})"));
    EXPECT_TRUE(accepts(flexible, *format, "{ \"a\" :\n 1 }"));
  }
}

}  // namespace
}  // namespace synapse::request
