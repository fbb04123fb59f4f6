// SPDX-License-Identifier: Apache-2.0
// JSON Schema (draft 2020-12 and draft-07, as real schemas use them) compiled to a Grammar
// whose language is the canonical serialisations of the instances the schema accepts.
//
// Honest by construction: every keyword is either enforced, ignored because it is an
// annotation (title, description, examples, default, $comment, ...), or a compile error
// `unsupported_schema` that names its JSON pointer. Never silently dropped.
//
// The language: compact serialisations (nlohmann dump() / json.dumps with (",", ":")) of the
// accepted instances whose declared properties come in `properties` order (or in any order,
// JsonSchemaOptions::property_order); keys that are not declared (additional, pattern,
// required-but-undeclared) follow them. Enforced: type,
// enum/const, properties, required, additionalProperties, patternProperties, propertyNames,
// min/maxProperties, dependencies/dependentRequired/dependentSchemas, items/prefixItems/
// additionalItems, min/maxItems, contains (+minContains 0/1), min/maxLength, pattern, format,
// minimum/maximum/exclusive* (exact decimal ranges), multipleOf 1, allOf (merged), anyOf,
// oneOf (exactly one: overlapping branches get each other's complement), not, if/then/else,
// $ref (local, recursive), nullable. Refused: uniqueItems, other multipleOf, maxContains,
// unevaluated*, $dynamicRef, remote refs, unknown formats, draft 3, and any complement or merge
// that cannot be written exactly (the error says which).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "constrain/grammar.h"

namespace synapse::constrain {

struct JsonSchemaOptions {
  // Compact (no whitespace, as json.dumps(separators=(",", ":")) writes) unless flexible, where
  // up to kMaxFlexibleWhitespace bytes of [ \t\n\r] may come before every token (the first
  // one too: a leading blank is as harmless to a parser as one between tokens).
  bool flexible_whitespace = false;
  static constexpr uint32_t kMaxFlexibleWhitespace = 20;
  // Declared properties in `properties` order (what OpenAI's structured outputs promise, and
  // what lets a schema put "reasoning" before "answer"), or in any order with each at most
  // once (the schema's own semantics: validators do not order keys; MaskBench's instances
  // come in their authors' order). Objects with more than 64 declared keys, or with required
  // keys that only patterns name, keep definition order.
  enum class PropertyOrder { kDefinition, kAny };
  PropertyOrder property_order = PropertyOrder::kDefinition;
  // Bounds: over any, the compile fails with schema_too_complex.
  std::chrono::milliseconds time_limit{2000};
  size_t max_rules = 200000;
  size_t max_regex_terms = 1000000;  // RegexBuilder::term_count()
  // oneOf whose branches are not provably disjoint: refused with unsupported_schema by
  // default, because a value matching two branches would be accepted though invalid. When
  // true, such a oneOf is compiled as anyOf (a superset) and a note names it.
  bool one_of_as_any_of = false;
  // When set, receives one line per place where the grammar is looser than the schema (only
  // one_of_as_any_of makes any).
  std::vector<std::string>* notes = nullptr;
};

// `schema` keeps its key order (properties are generated in definition order).
Result<Grammar> compile_json_schema(const nlohmann::ordered_json& schema,
                                    const JsonSchemaOptions& options = {});

// Adds the schema's lexemes and rules to `builder` and returns the symbol that derives its
// instances: for grammars that embed JSON values (tool calls, whose arguments follow each
// function's parameters).
Result<Symbol> add_json_schema(GrammarBuilder& builder, const nlohmann::ordered_json& schema,
                               const JsonSchemaOptions& options = {});
Result<Symbol> add_any_json_object(GrammarBuilder& builder, const JsonSchemaOptions& options = {});

// Any JSON value (`{"type": "json_object"}` uses json_object_grammar: any object).
Result<Grammar> any_json_grammar(const JsonSchemaOptions& options = {});
Result<Grammar> json_object_grammar(const JsonSchemaOptions& options = {});

}  // namespace synapse::constrain
