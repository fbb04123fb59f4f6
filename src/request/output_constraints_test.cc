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

// A worker process compiles the constraint again from the recipe that travels with the request:
// its masker accepts and refuses the same texts as the front's; a recipe it cannot read is a
// protocol_error, not a crash.
TEST(OutputConstraints, RecipeCompiledElsewhereAcceptsTheSameTexts) {
  SYN_REQUIRE_FIXTURE(vocab, "tokenizer/vocab/llama3-vocab.gguf");
  const tokenizer::Tokenizer tok = llama3_tokenizer(vocab);
  api::OutputFormat schema;
  schema.kind = api::OutputFormat::Kind::kJsonSchema;
  schema.schema = nlohmann::ordered_json::parse(
      R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})");
  api::OutputFormat grammar;
  grammar.kind = api::OutputFormat::Kind::kGrammar;
  grammar.grammar = R"(root ::= "yes" | "no")";
  OutputConstraints front(tok, chat::TemplateFamily::kUnknown);
  OutputConstraints worker(tok, chat::TemplateFamily::kUnknown);
  const std::vector<std::pair<const api::OutputFormat*, std::vector<std::string>>> cases = {
      {&schema, {R"({"a":1})", R"({"a":"x"})", R"({"b":1})"}},
      {&grammar, {"yes", "no", "maybe"}},
  };
  for (const auto& [format, texts] : cases) {
    Result<CompiledConstraint> compiled = front.for_format(*format);
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    ASSERT_FALSE(compiled->recipe.empty());
    auto again = worker.compile_recipe(compiled->recipe);
    ASSERT_TRUE(again.ok()) << again.status().to_string();
    for (const std::string& text : texts) {
      constrain::Matcher a = compiled->masker->new_matcher();
      constrain::Matcher b = (*again)->new_matcher();
      const bool front_accepts = a.consume_bytes(text) && a.accepts_end();
      EXPECT_EQ(b.consume_bytes(text) && b.accepts_end(), front_accepts) << text;
    }
  }
  EXPECT_TRUE(accepts(front, schema, R"({"a":1})"));
  EXPECT_FALSE(accepts(front, grammar, "maybe"));
  for (const char* bad : {"", "not json", R"({"kind":"nope"})", R"({"kind":"schema"})"}) {
    auto refused = worker.compile_recipe(bad);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().code(), ErrorCode::kProtocolError)
        << bad << ": " << refused.status().to_string();
  }
}

}  // namespace
}  // namespace synapse::request
