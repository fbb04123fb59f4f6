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

Result<std::shared_ptr<constrain::TokenMasker>> OutputConstraints::cached(const std::string& key,
                                                                          const Compile& compile) {
  {
    std::lock_guard lock(mu_);
    const auto found = by_key_.find(key);
    if (found != by_key_.end()) {
      lru_.splice(lru_.begin(), lru_, found->second);
      return found->second->second;
    }
  }
  // Compiled outside the lock: a slow schema does not hold up other requests.
  Result<constrain::Grammar> grammar = compile();
  if (!grammar.ok()) return std::move(grammar).take_status();
  auto masker = std::make_shared<constrain::TokenMasker>(
      std::make_shared<const constrain::Grammar>(std::move(grammar).value()), trie());
  std::lock_guard lock(mu_);
  if (by_key_.count(key) == 0) {
    lru_.emplace_front(key, masker);
    by_key_[key] = lru_.begin();
    if (lru_.size() > kMaxCached) {
      by_key_.erase(lru_.back().first);
      lru_.pop_back();
    }
  }
  return masker;
}

Result<std::shared_ptr<constrain::TokenMasker>> OutputConstraints::for_format(
    const api::OutputFormat& format) {
  using Kind = api::OutputFormat::Kind;
  switch (format.kind) {
    case Kind::kText:
      return std::shared_ptr<constrain::TokenMasker>();
    case Kind::kJsonObject:
      return cached("object", [&] { return constrain::json_object_grammar(schema_options_); });
    case Kind::kJsonSchema: {
      auto result = cached("schema:" + format.schema.dump(), [&] {
        return constrain::compile_json_schema(format.schema, schema_options_);
      });
      if (!result.ok()) return constrain::under_request_field(result.status(), format.field);
      return result;
    }
    case Kind::kGrammar: {
      auto result =
          cached("gbnf:" + format.grammar, [&] { return constrain::compile_gbnf(format.grammar); });
      if (!result.ok()) return std::move(result).take_status().with_field(format.field);
      return result;
    }
  }
  return std::shared_ptr<constrain::TokenMasker>();
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
  constrain::ToolCallFormat call_format;
  call_format.open = syntax.open;
  call_format.close = syntax.close;
  call_format.separator = syntax.separator;
  call_format.list_open = syntax.list_open;
  call_format.arguments_key = syntax.arguments_key;
  call_format.parallel = syntax.parallel && parallel;
  std::vector<constrain::ToolFunction> functions;
  for (const Json& tool : tools) {
    const Json& function = tool.at("function");
    const std::string name = function.at("name").get<std::string>();
    if (choice.kind == Kind::kFunction && name != choice.function) continue;
    functions.push_back(
        {name, function.contains("parameters") ? function.at("parameters") : Json()});
  }
  const constrain::ToolMode mode =
      choice.kind == Kind::kAuto ? constrain::ToolMode::kAuto : constrain::ToolMode::kRequired;
  // In auto mode a reply that calls nothing must still follow the response format.
  Json content_schema;
  const Json* content = nullptr;
  if (mode == constrain::ToolMode::kAuto) {
    if (format.kind == api::OutputFormat::Kind::kJsonObject) {
      content_schema = Json{{"type", "object"}};
      content = &content_schema;
    } else if (format.kind == api::OutputFormat::Kind::kJsonSchema) {
      content = &format.schema;
    }
  }
  Json key = Json::object();
  key["tools"] = tools;
  key["choice"] = static_cast<int>(choice.kind);
  key["function"] = choice.function;
  key["parallel"] = call_format.parallel;
  key["content"] = content != nullptr ? *content : Json();
  SYN_ASSIGN_OR_RETURN(plan.constraint, cached("tools:" + key.dump(), [&] {
                         return constrain::compile_tool_grammar(call_format, functions, mode,
                                                                content, schema_options_);
                       }));
  plan.syntax = syntax;
  plan.syntax->parallel = call_format.parallel;
  return plan;
}

}  // namespace synapse::request
