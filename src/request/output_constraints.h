// SPDX-License-Identifier: Apache-2.0
// The constraint a request's output format and tools put on generation: response_format
// (json_object, json_schema), llama-server's json_schema and grammar fields, and tool calls in
// the chat template family's syntax. Compiles them into a TokenMasker for the served model's
// vocabulary and keeps recently compiled ones, so a client that sends the same schema again
// pays for compiling once. The vocabulary trie is built on first use.
//
// Each constraint is compiled from a recipe (JSON text: what kind of grammar and its sources),
// which travels with the request (GenerationRequest::constraint_recipe), so a worker process
// serving the model compiles the same grammar again (`compile_recipe`); the recipe is also the
// cache's key.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "api/requests.h"
#include "base/status.h"
#include "chat/tool_calls.h"
#include "constrain/json_schema.h"
#include "constrain/token_masker.h"
#include "tokenizer/tokenizer.h"

namespace synapse::request {

// A compiled constraint and its recipe; a null masker (and empty recipe): unconstrained.
struct CompiledConstraint {
  std::shared_ptr<constrain::TokenMasker> masker;
  std::string recipe;
};

// What a chat request's tools ask for; `syntax` set means the reply is read for tool calls.
struct ToolPlan {
  CompiledConstraint constraint;
  std::optional<chat::ToolCallSyntax> syntax;
};

class OutputConstraints {
 public:
  // `flexible_whitespace`: JSON may have whitespace between its tokens (`synapse serve
  // --json-whitespace flexible`); compact by default, so an answer's length is the schema's
  // to bound.
  OutputConstraints(const tokenizer::Tokenizer& tokenizer, chat::TemplateFamily family,
                    bool flexible_whitespace = false);

  // The constraint of a response format; null for plain text. Errors: unsupported_schema,
  // schema_too_complex, invalid_grammar, naming the request field.
  Result<CompiledConstraint> for_format(const api::OutputFormat& format);
  // The constraint and reading of a chat request with tools (and maybe a response format).
  Result<ToolPlan> for_tools(const nlohmann::ordered_json& tools, const api::ToolChoice& choice,
                             bool parallel, const api::OutputFormat& format);
  // The constraint a recipe of for_format or for_tools describes (a worker process's side).
  // Errors: protocol_error for a recipe this build cannot read, and the compilers' own.
  Result<std::shared_ptr<constrain::TokenMasker>> compile_recipe(const std::string& recipe);

  chat::TemplateFamily family() const { return family_; }

 private:
  // The recipe's masker, from the cache or compiled (`recipe` is its JSON text).
  Result<std::shared_ptr<constrain::TokenMasker>> cached(const nlohmann::ordered_json& recipe,
                                                         const std::string& text);
  Result<constrain::Grammar> compile(const nlohmann::ordered_json& recipe) const;
  std::shared_ptr<const constrain::TokenTrie> trie();

  const tokenizer::Tokenizer& tokenizer_;
  const chat::TemplateFamily family_;
  const constrain::JsonSchemaOptions schema_options_;
  std::once_flag trie_once_;
  std::shared_ptr<const constrain::TokenTrie> trie_;
  std::mutex mu_;
  // Most recently used first; bounded.
  std::list<std::pair<std::string, std::shared_ptr<constrain::TokenMasker>>> lru_;
  std::unordered_map<std::string, decltype(lru_)::iterator> by_key_;
  static constexpr size_t kMaxCached = 64;
};

}  // namespace synapse::request
