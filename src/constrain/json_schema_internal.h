// SPDX-License-Identifier: Apache-2.0
// The JSON Schema compiler's intermediate form, shared by json_schema*.cc only.
//
// A schema object is first turned into a Node: a normal form in which every keyword has been
// either folded into a per-type constraint (NumberRange, StringNode, ArrayNode, ObjectNode),
// a finite set of values (enum/const), a union (anyOf, oneOf, `type` lists), or a reference
// (kept as such so recursion terminates). allOf, `not` and sibling keywords become
// intersections computed on nodes. The grammar is generated from nodes afterwards, so every
// keyword the grammar enforces passes through one place (json_schema_emit.cc).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "constrain/ecma_regex.h"
#include "constrain/grammar.h"
#include "constrain/json_schema.h"
#include "constrain/json_schema_number.h"
#include "constrain/regex.h"

namespace synapse::constrain::json_schema_internal {

using Json = nlohmann::ordered_json;

enum class NodeKind : uint8_t {
  kAny,      // every JSON value
  kNothing,  // no value
  kNull,
  kBoolean,
  kNumber,  // NumberRange (integer or not)
  kString,
  kArray,
  kObject,
  kConst,  // one of `values`
  kAnyOf,  // one of `options`
  kRef,    // the schema at JSON pointer `ref` of the root document
};

struct Node;
using NodePtr = std::shared_ptr<const Node>;

struct StringNode {
  uint32_t min_length = 0;  // in code points
  uint32_t max_length = kUnbounded;
  // Regexes over the encoded body (between the quotes); all must match.
  std::vector<RegexId> body_regexes;
};

struct ArrayNode {
  std::vector<NodePtr> prefix_items;
  NodePtr items;  // after the prefix; never null (kAny when unconstrained)
  // Each must match at least one element (anywhere, prefix included).
  std::vector<NodePtr> contains;
  uint32_t min_items = 0;
  uint32_t max_items = kUnbounded;
};

struct PropertyNode {
  std::string name;
  NodePtr schema;
};

struct PatternPropertyNode {
  RegexId key_body;  // search-semantics regex over the encoded key
  NodePtr schema;
};

// "Some key whose lexeme (quotes included) matches key_lexeme has a value in `value`", from
// negated object constraints: a key that breaks additionalProperties, patternProperties,
// propertyNames.
struct WitnessNode {
  RegexId key_lexeme;
  NodePtr value;
};

struct ObjectNode {
  std::vector<PropertyNode> properties;  // definition order
  std::vector<std::string> required;
  std::vector<PatternPropertyNode> pattern_properties;
  NodePtr additional;  // never null
  // Restricts every key (propertyNames): a regex over the whole key lexeme, quotes included,
  // or kNoRegex when keys are free.
  RegexId key_lexeme;
  uint32_t min_properties = 0;
  uint32_t max_properties = kUnbounded;
  std::vector<WitnessNode> witnesses;  // each must be met by some property
};

inline constexpr RegexId kNoRegex = UINT32_MAX;

struct Node {
  NodeKind kind = NodeKind::kAny;
  NumberRange number;
  StringNode string;
  ArrayNode array;
  ObjectNode object;
  std::vector<Json> values;      // kConst
  std::vector<NodePtr> options;  // kAnyOf
  std::string ref;               // kRef
};

struct SharedNodes {
  NodePtr any, nothing, null, boolean, number, string, array, object;
};
const SharedNodes& shared_nodes();

// Errors naming a JSON pointer ("/" for the root).
inline Status invalid(const std::string& pointer, const std::string& message) {
  return Status(ErrorCode::kInvalidGrammar, message).with_field(pointer.empty() ? "/" : pointer);
}

inline Status unsupported(const std::string& pointer, const std::string& message) {
  return Status(ErrorCode::kUnsupportedSchema, message).with_field(pointer.empty() ? "/" : pointer);
}

inline std::string escape_token(const std::string& token) {
  std::string out;
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

inline std::string child(const std::string& pointer, const std::string& token) {
  return pointer + "/" + escape_token(token);
}
inline std::string child(const std::string& pointer, size_t index) {
  return pointer + "/" + std::to_string(index);
}

// JSON Schema equality: numbers by value, objects regardless of key order.
bool json_equal(const Json& a, const Json& b);
// The canonical compact spelling (invalid UTF-8 replaced rather than thrown on).
std::string canonical_dump(const Json& v);

class SchemaCompiler {
 public:
  SchemaCompiler(const Json& root, const JsonSchemaOptions& options);
  // Adds to a caller's builder instead of one of its own (grammars that embed JSON values).
  SchemaCompiler(const Json& root, const JsonSchemaOptions& options, GrammarBuilder& builder);
  // The symbol deriving the schema's instances, its rules added to the builder.
  Result<Symbol> compile_into();
  Result<Grammar> compile();
  Result<Grammar> compile_any(bool object_only);

  // --- Nodes from schema JSON (json_schema.cc) ---
  Result<NodePtr> build(const Json& schema, const std::string& pointer,
                        const std::string& resource);
  // The node of a kRef target, built on first use; unsupported_schema when the target is
  // still being built (a reference whose own definition needs its content, e.g. a schema that
  // is the allOf of itself).
  Result<NodePtr> deref(const Node& ref_node);

  // --- Node algebra (json_schema_ir.cc) ---
  Result<NodePtr> intersect(const NodePtr& a, const NodePtr& b);
  // The complement; unsupported_schema (naming `pointer`) where it is not expressible.
  Result<NodePtr> negate(const NodePtr& n, const std::string& pointer);
  // Whether `value` is an instance of `n`.
  Result<bool> accepts(const NodePtr& n, const Json& value, int depth = 0);
  // True only when no value is an instance of both (false means "not provable").
  Result<bool> disjoint(const NodePtr& a, const NodePtr& b, int depth = 0);
  // The schema the value of key `name` must satisfy in `object` (declared, pattern and
  // additional schemas together).
  Result<NodePtr> schema_for_key(const ObjectNode& object, const std::string& name);

  // --- Grammar (json_schema_emit.cc) ---
  Result<Symbol> emit(const NodePtr& n);
  Result<Symbol> emit_value(const Json& value);
  Symbol any_value();
  Symbol any_object();
  // One encoded character of a JSON string (built once: it is a large regex).
  RegexId any_char() {
    if (!any_char_) any_char_ = any_encoded_char(rx(), CharEncoding::kJsonString);
    return *any_char_;
  }
  // The bodies (encoded characters) that `body` does not match.
  RegexId body_complement(RegexId body);
  // The lexeme regex of a string node: quotes, encoded body, every constraint. Every regex in
  // StringNode::body_regexes matches encoded characters only.
  RegexId string_lexeme(const StringNode& s);

  // Shared constant nodes.
  const NodePtr& any_node() const { return any_; }
  const NodePtr& nothing_node() const { return nothing_; }
  NodePtr type_node(NodeKind kind) const;
  static NodePtr make(Node n) { return std::make_shared<const Node>(std::move(n)); }
  NodePtr any_of(std::vector<NodePtr> options) const;

  Status check_budget(const std::string& pointer);
  // Counts the nesting of build/intersect/negate/emit calls, so that a deeply nested schema
  // fails with schema_too_complex before it exhausts the stack. The deepest MaskBench schema
  // nests 34; a level costs up to ~35 KB of stack in a sanitizer build (8 MB stacks).
  class Nesting {
   public:
    explicit Nesting(SchemaCompiler& c) : c_(c) { ++c_.nesting_; }
    ~Nesting() { --c_.nesting_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;

   private:
    SchemaCompiler& c_;
  };
  static constexpr int kMaxNesting = 100;
  RegexBuilder& rx() { return gb_.regex(); }
  void note(std::string text) {
    if (options_.notes != nullptr) options_.notes->push_back(std::move(text));
  }

 private:
  // A reference target: a schema of the document (keyed by its JSON pointer), or a combination
  // made while merging (keyed by kCombinedRef + its literals): the intersection of referenced
  // schemas and complements of referenced schemas. Combinations are references too, created
  // once per set of literals, so intersecting or negating recursive schemas terminates (a
  // product construction) instead of unfolding them forever.
  struct RefTarget {
    const Json* schema = nullptr;
    std::string resource;  // JSON pointer of the enclosing resource (a schema with $id)
    std::vector<std::string> literals;  // combinations: pointers, "!" + pointer for complements
    std::string pointer;                // where the combination was first needed (errors)
    NodePtr node;
    NodePtr ref_node;  // the shared kRef node of a combination
    bool building = false;
  };
  static constexpr char kCombinedRef = '&';

  // json_schema_refs.cc
  void index_document();
  void index_resources(const Json& schema, const std::string& pointer, const std::string& base,
                       const std::string& resource);
  Result<std::string> resolve_ref(const std::string& ref, const std::string& resource,
                                  const std::string& pointer);
  Result<NodePtr> build_object_keywords(const Json& s, const std::string& pointer,
                                        const std::string& resource);
  Result<NodePtr> build_types(const Json& s, const std::string& pointer,
                              const std::string& resource);
  Result<NodePtr> build_number(const Json& s, const std::string& pointer, bool integer);
  Result<NodePtr> build_string(const Json& s, const std::string& pointer);
  Result<NodePtr> build_array(const Json& s, const std::string& pointer,
                              const std::string& resource);
  Result<NodePtr> build_object(const Json& s, const std::string& pointer,
                               const std::string& resource);
  Result<NodePtr> apply_dependencies(const Json& s, const std::string& pointer,
                                     const std::string& resource, NodePtr node);
  static constexpr size_t kMaxDependencies = 8;
  // The schema's `oneOf` intersected with `base`, what its other keywords allow.
  Result<NodePtr> build_one_of(const Json& s, const std::string& pointer,
                               const std::string& resource, const NodePtr& base);

  // json_schema_ir.cc
  Result<NodePtr> intersect_same_kind(const NodePtr& a, const NodePtr& b);
  Result<NodePtr> intersect_objects(const Node& a, const Node& b);
  Result<NodePtr> negate_typed(const NodePtr& n, const std::string& pointer);
  NodePtr combined_ref(std::vector<std::string> literals, const std::string& pointer);
  std::vector<std::string> ref_literals(const Node& ref_node) const;
  bool string_matches(const StringNode& s, const std::string& text);

  SchemaCompiler(const Json& root, const JsonSchemaOptions& options,
                 std::unique_ptr<GrammarBuilder> own, GrammarBuilder* external);

  // json_schema_emit.cc
  Symbol lexeme(RegexId r);
  Symbol punct(std::string_view text) { return lexeme(rx().literal(text)); }
  NonterminalId never();
  Result<Symbol> emit_array(const ArrayNode& a);
  Result<Symbol> emit_object(const ObjectNode& o);
  Result<Symbol> emit_ref(const Node& n);
  RegexId key_lexeme_any();

  const Json& root_;
  JsonSchemaOptions options_;
  std::chrono::steady_clock::time_point deadline_;
  bool legacy_ref_ = false;  // drafts 3-7: keywords beside $ref are ignored
  int nesting_ = 0;
  std::unique_ptr<GrammarBuilder> own_builder_;  // null when adding to a caller's builder
  GrammarBuilder& gb_;
  NodePtr any_;
  NodePtr nothing_;
  std::map<std::string, RefTarget> refs_;        // by resolved JSON pointer
  std::map<std::string, std::string> ids_;       // absolute $id -> JSON pointer
  std::map<std::string, std::string> anchors_;   // "resource pointer#anchor" -> JSON pointer
  std::map<std::string, std::string> base_uri_;  // resource pointer -> its absolute base URI
  std::unordered_map<const Node*, Symbol> emitted_;
  std::map<std::string, NonterminalId> ref_nonterminals_;
  std::vector<NodePtr> keep_alive_;  // nodes whose address is a key of emitted_
  std::optional<Symbol> any_value_;
  std::optional<Symbol> any_object_;
  std::optional<NonterminalId> never_;
  std::optional<RegexId> ws_;
  std::optional<RegexId> any_char_;
};

}  // namespace synapse::constrain::json_schema_internal
