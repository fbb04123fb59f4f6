// SPDX-License-Identifier: Apache-2.0
// The constraint a request's output format and tools put on generation: response_format
// (json_object, json_schema), llama-server's json_schema and grammar fields, and tool calls in
// the chat template family's syntax. Compiles them into a TokenMasker for the served model's
// vocabulary and keeps recently compiled ones, so a client that sends the same schema again
// pays for compiling once. The vocabulary trie is built on first use.
#pragma once

#include <functional>
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

// What a chat request's tools ask for; `syntax` set means the reply is read for tool calls.
struct ToolPlan {
  std::shared_ptr<constrain::TokenMasker> constraint;  // null: unconstrained
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
  Result<std::shared_ptr<constrain::TokenMasker>> for_format(const api::OutputFormat& format);
  // The constraint and reading of a chat request with tools (and maybe a response format).
  Result<ToolPlan> for_tools(const nlohmann::ordered_json& tools, const api::ToolChoice& choice,
                             bool parallel, const api::OutputFormat& format);

  chat::TemplateFamily family() const { return family_; }

 private:
  using Compile = std::function<Result<constrain::Grammar>()>;
  Result<std::shared_ptr<constrain::TokenMasker>> cached(const std::string& key,
                                                         const Compile& compile);
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
