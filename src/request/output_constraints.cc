// SPDX-License-Identifier: Apache-2.0
#include "request/output_constraints.h"

#include "constrain/gbnf.h"
#include "constrain/json_schema.h"
#include "constrain/tool_grammar.h"

namespace synapse::request {
namespace {

using Json = nlohmann::ordered_json;

}  // namespace

OutputConstraints::OutputConstraints(const tokenizer::Tokenizer& tokenizer,
                                     chat::TemplateFamily family, bool flexible_whitespace)
    : tokenizer_(tokenizer),
      family_(family),
      schema_options_{.flexible_whitespace = flexible_whitespace} {}

std::shared_ptr<const constrain::TokenTrie> OutputConstraints::trie() {
  // End-of-generation tokens are the service's to allow (per request), so the trie has none.
  std::call_once(trie_once_, [this] {
    trie_ = std::make_shared<const constrain::TokenTrie>(
        constrain::TokenTrie::from_tokenizer(tokenizer_, {}));
  });
  return trie_;
}

Result<std::shared_ptr<constrain::TokenMasker>> OutputConstraints::cached(const Json& recipe,
                                                                          const std::string& text) {
  {
    std::lock_guard lock(mu_);
    const auto found = by_key_.find(text);
    if (found != by_key_.end()) {
      lru_.splice(lru_.begin(), lru_, found->second);
      return found->second->second;
    }
  }
  // Compiled outside the lock: a slow schema does not hold up other requests.
  Result<constrain::Grammar> grammar = compile(recipe);
  if (!grammar.ok()) return std::move(grammar).take_status();
  auto masker = std::make_shared<constrain::TokenMasker>(
      std::make_shared<const constrain::Grammar>(std::move(grammar).value()), trie());
  std::lock_guard lock(mu_);
  if (by_key_.count(text) == 0) {
    lru_.emplace_front(text, masker);
    by_key_[text] = lru_.begin();
    if (lru_.size() > kMaxCached) {
      by_key_.erase(lru_.back().first);
      lru_.pop_back();
    }
  }
  return masker;
}

Result<constrain::Grammar> OutputConstraints::compile(const Json& recipe) const {
  const std::string kind = recipe.value("kind", "");
  if (kind == "object") return constrain::json_object_grammar(schema_options_);
  if (kind == "schema") return constrain::compile_json_schema(recipe.at("schema"), schema_options_);
  if (kind == "gbnf") return constrain::compile_gbnf(recipe.at("grammar").get<std::string>());
  if (kind != "tools") {
    return Status(ErrorCode::kProtocolError, "unknown constraint recipe kind '" + kind + "'");
  }
  const chat::ToolCallSyntax syntax = chat::tool_call_syntax(family_);
  constrain::ToolCallFormat call_format;
  call_format.open = syntax.open;
  call_format.close = syntax.close;
  call_format.separator = syntax.separator;
  call_format.list_open = syntax.list_open;
  call_format.arguments_key = syntax.arguments_key;
  call_format.parallel = recipe.at("parallel").get<bool>();
  const auto choice = static_cast<api::ToolChoice::Kind>(recipe.at("choice").get<int>());
  const std::string chosen = recipe.at("function").get<std::string>();
  std::vector<constrain::ToolFunction> functions;
  for (const Json& tool : recipe.at("tools")) {
    const Json& function = tool.at("function");
    const std::string name = function.at("name").get<std::string>();
    if (choice == api::ToolChoice::Kind::kFunction && name != chosen) continue;
    functions.push_back(
        {name, function.contains("parameters") ? function.at("parameters") : Json()});
  }
  const constrain::ToolMode mode = choice == api::ToolChoice::Kind::kAuto
                                       ? constrain::ToolMode::kAuto
                                       : constrain::ToolMode::kRequired;
  const Json& content = recipe.at("content");
  return constrain::compile_tool_grammar(call_format, functions, mode,
                                         content.is_null() ? nullptr : &content, schema_options_);
}

Result<std::shared_ptr<constrain::TokenMasker>> OutputConstraints::compile_recipe(
    const std::string& recipe) {
  Json parsed = Json::parse(recipe, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) {
    return Status(ErrorCode::kProtocolError, "a constraint recipe that is not a JSON object");
  }
  try {
    return cached(parsed, recipe);
  } catch (const Json::exception& e) {
    return Status(ErrorCode::kProtocolError,
                  std::string("a constraint recipe this build cannot read: ") + e.what());
  }
}

Result<CompiledConstraint> OutputConstraints::for_format(const api::OutputFormat& format) {
  using Kind = api::OutputFormat::Kind;
  Json recipe = Json::object();
  switch (format.kind) {
    case Kind::kText:
      return CompiledConstraint{};
    case Kind::kJsonObject:
      recipe["kind"] = "object";
      break;
    case Kind::kJsonSchema:
      recipe["kind"] = "schema";
      recipe["schema"] = format.schema;
      break;
    case Kind::kGrammar:
      recipe["kind"] = "gbnf";
      recipe["grammar"] = format.grammar;
      break;
  }
  CompiledConstraint compiled{.recipe = recipe.dump()};
  Result<std::shared_ptr<constrain::TokenMasker>> masker = cached(recipe, compiled.recipe);
  if (!masker.ok()) {
    if (format.kind == Kind::kJsonSchema) {
      return constrain::under_request_field(masker.status(), format.field);
    }
    return std::move(masker).take_status().with_field(format.field);
  }
  compiled.masker = std::move(masker).value();
  return compiled;
}

Result<ToolPlan> OutputConstraints::for_tools(const Json& tools, const api::ToolChoice& choice,
                                              bool parallel, const api::OutputFormat& format) {
  using Kind = api::ToolChoice::Kind;
  ToolPlan plan;
  if (choice.kind == Kind::kNone || !tools.is_array() || tools.empty()) {
    SYN_ASSIGN_OR_RETURN(plan.constraint, for_format(format));
    return plan;
  }
  if (format.kind == api::OutputFormat::Kind::kGrammar) {
    return Status(ErrorCode::kUnsupportedParameter, "'grammar' cannot be combined with tools",
                  ErrorWhere{.field = format.field});
  }
  const chat::ToolCallSyntax syntax = chat::tool_call_syntax(family_);
  // In auto mode a reply that calls nothing must still follow the response format.
  Json content;
  if (choice.kind == Kind::kAuto) {
    if (format.kind == api::OutputFormat::Kind::kJsonObject) {
      content = Json{{"type", "object"}};
    } else if (format.kind == api::OutputFormat::Kind::kJsonSchema) {
      content = format.schema;
    }
  }
  Json recipe = Json::object();
  recipe["kind"] = "tools";
  recipe["tools"] = tools;
  recipe["choice"] = static_cast<int>(choice.kind);
  recipe["function"] = choice.function;
  recipe["parallel"] = syntax.parallel && parallel;
  recipe["content"] = std::move(content);
  plan.constraint.recipe = recipe.dump();
  SYN_ASSIGN_OR_RETURN(plan.constraint.masker, cached(recipe, plan.constraint.recipe));
  plan.syntax = syntax;
  plan.syntax->parallel = recipe["parallel"].get<bool>();
  return plan;
}

}  // namespace synapse::request
