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

// A JSON Schema response format: an object with a required integer "a".
api::OutputFormat integer_a_schema() {
  api::OutputFormat schema;
  schema.kind = api::OutputFormat::Kind::kJsonSchema;
  schema.schema = nlohmann::ordered_json::parse(
      R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})");
  return schema;
}

// `synapse serve --json-whitespace flexible` lets JSON have blanks between its tokens, in
// response formats; the default is compact.
TEST(OutputConstraints, WhitespaceIsCompactUnlessFlexible) {
  SYN_REQUIRE_FIXTURE(vocab, "tokenizer/vocab/llama3-vocab.gguf");
  const tokenizer::Tokenizer tok = llama3_tokenizer(vocab);
  api::OutputFormat schema = integer_a_schema();
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

// A worker process compiles the constraint again from the recipe that travels with the request:
// its masker accepts and refuses the same texts as the front's; a recipe it cannot read is a
// protocol_error, not a crash.
TEST(OutputConstraints, RecipeCompiledElsewhereAcceptsTheSameTexts) {
  SYN_REQUIRE_FIXTURE(vocab, "tokenizer/vocab/llama3-vocab.gguf");
  const tokenizer::Tokenizer tok = llama3_tokenizer(vocab);
  const api::OutputFormat schema = integer_a_schema();
  api::OutputFormat grammar;
  grammar.kind = api::OutputFormat::Kind::kGrammar;
  grammar.grammar = R"(root ::= "yes" | "no")";
  OutputConstraints front(tok, chat::TemplateFamily::kUnknown);
  OutputConstraints worker(tok, chat::TemplateFamily::kUnknown);
  // Each text with whether the constraint must accept it, on both sides.
  const std::vector<std::pair<const api::OutputFormat*, std::vector<std::pair<std::string, bool>>>>
      cases = {
          {&schema, {{R"({"a":1})", true}, {R"({"a":"x"})", false}, {R"({"b":1})", false}}},
          {&grammar, {{"yes", true}, {"no", true}, {"maybe", false}}},
      };
  const auto accepted = [](const constrain::TokenMasker& masker, const std::string& text) {
    constrain::Matcher matcher = masker.new_matcher();
    return matcher.consume_bytes(text) && matcher.accepts_end();
  };
  for (const auto& [format, texts] : cases) {
    Result<CompiledConstraint> compiled = front.for_format(*format);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    ASSERT_FALSE(compiled->recipe.empty());
    auto again = worker.compile_recipe(compiled->recipe);
    ASSERT_TRUE(again.ok()) << again.status().to_string();
    for (const auto& [text, expected] : texts) {
      EXPECT_EQ(accepted(*compiled->masker, text), expected) << "front: " << text;
      EXPECT_EQ(accepted(**again, text), expected) << "worker: " << text;
    }
  }
  for (const char* bad : {"", "not json", R"({"kind":"nope"})", R"({"kind":"schema"})"}) {
    auto refused = worker.compile_recipe(bad);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().code(), ErrorCode::kProtocolError)
        << bad << ": " << refused.status().to_string();
  }
}

}  // namespace
}  // namespace synapse::request
