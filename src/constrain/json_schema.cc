// SPDX-License-Identifier: Apache-2.0
// JSON Schema keywords to nodes (json_schema_internal.h) and the public entry points ($ref
// resolution is in json_schema_refs.cc, node algebra in json_schema_ir.cc, rules in
// json_schema_emit.cc). Keyword policy, in one place:
//  - enforced: the keywords read below (type, enum, const, $ref, allOf, anyOf, oneOf, not,
//    nullable, and the per-type ones in build_number/string/array/object);
//  - refused with unsupported_schema and the keyword's pointer: the validation keywords of
//    drafts 4 to 2020-12 that the grammar cannot enforce (kUnsupportedKeywords and the
//    per-type checks), unless their value makes them trivially true;
//  - ignored: annotations (title, description, default, examples, ...) and keywords no draft
//    defines (x-*, javaType, ...), which validators ignore too.
#include "constrain/json_schema.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

#include "constrain/ecma_regex.h"
#include "constrain/json_schema_internal.h"

namespace synapse::constrain {
namespace json_schema_internal {
namespace {

// Validation keywords the grammar cannot enforce, whatever the instance's type.
constexpr const char* kUnsupportedKeywords[] = {"$dynamicRef", "$recursiveRef"};

// Reads a non-negative integer keyword (2.0 counts as 2); values past 32 bits saturate.
Result<std::optional<uint32_t>> read_count(const Json& s, const char* key,
                                           const std::string& pointer) {
  auto it = s.find(key);
  if (it == s.end()) return std::optional<uint32_t>();
  if (!it->is_number()) return invalid(child(pointer, key), std::string(key) + " must be a number");
  const Decimal d = decimal_of(*it);
  if (d.negative && !d.is_zero()) {
    return invalid(child(pointer, key), std::string(key) + " must not be negative");
  }
  if (!is_integral(d))
    return invalid(child(pointer, key), std::string(key) + " must be an integer");
  if (d.int_digits.size() > 9) return std::optional<uint32_t>(kUnbounded - 1);
  const uint64_t v = d.int_digits.empty() ? 0 : std::stoull(d.int_digits);
  return std::optional<uint32_t>(static_cast<uint32_t>(std::min<uint64_t>(v, kUnbounded - 1)));
}

bool is_legacy_draft(const Json& root) {
  if (!root.is_object()) return false;
  auto it = root.find("$schema");
  if (it == root.end() || !it->is_string()) return false;
  const std::string& s = it->get_ref<const std::string&>();
  for (const char* d : {"draft-03", "draft-04", "draft-05", "draft-06", "draft-07"}) {
    if (s.find(d) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

SchemaCompiler::SchemaCompiler(const Json& root, const JsonSchemaOptions& options)
    : SchemaCompiler(root, options, std::make_unique<GrammarBuilder>(), nullptr) {}

SchemaCompiler::SchemaCompiler(const Json& root, const JsonSchemaOptions& options,
                               GrammarBuilder& builder)
    : SchemaCompiler(root, options, nullptr, &builder) {}

SchemaCompiler::SchemaCompiler(const Json& root, const JsonSchemaOptions& options,
                               std::unique_ptr<GrammarBuilder> own, GrammarBuilder* external)
    : root_(root),
      options_(options),
      deadline_(std::chrono::steady_clock::now() + options.time_limit),
      legacy_ref_(is_legacy_draft(root)),
      own_builder_(std::move(own)),
      gb_(external != nullptr ? *external : *own_builder_) {
  any_ = shared_nodes().any;
  nothing_ = shared_nodes().nothing;
}

Status SchemaCompiler::check_budget(const std::string& pointer) {
  // Without a pointer (deep in merging or emitting) the field is left for the caller to name.
  if (nesting_ > kMaxNesting) {
    return Status(ErrorCode::kSchemaTooComplex,
                  "the schema nests deeper than " + std::to_string(kMaxNesting) + " levels")
        .with_field(pointer);
  }
  if (std::chrono::steady_clock::now() > deadline_) {
    return Status(ErrorCode::kSchemaTooComplex, "compiling the schema took longer than " +
                                                    std::to_string(options_.time_limit.count()) +
                                                    " ms")
        .with_field(pointer);
  }
  if (gb_.rule_count() > options_.max_rules) {
    return Status(ErrorCode::kSchemaTooComplex,
                  "the grammar needs more than " + std::to_string(options_.max_rules) + " rules")
        .with_field(pointer);
  }
  if (gb_.regex().term_count() > options_.max_regex_terms) {
    return Status(ErrorCode::kSchemaTooComplex, "the schema's regular expressions need more than " +
                                                    std::to_string(options_.max_regex_terms) +
                                                    " terms")
        .with_field(pointer);
  }
  return ok_status();
}

// --- keywords to nodes -------------------------------------------------------------------

Result<NodePtr> SchemaCompiler::build(const Json& s, const std::string& pointer,
                                      const std::string& resource_in) {
  const Nesting nesting(*this);
  SYN_RETURN_IF_ERROR(check_budget(pointer));
  if (s.is_boolean()) return s.get<bool>() ? any_ : nothing_;
  if (!s.is_object()) return invalid(pointer, "a schema must be an object or a boolean");
  std::string resource = resource_in;
  if (base_uri_.count(pointer) != 0) resource = pointer;

  if (legacy_ref_ && s.contains("$ref")) {
    // Drafts 3 to 7: "All other properties in a $ref object MUST be ignored."
    const Json& ref = s["$ref"];
    if (!ref.is_string()) return invalid(child(pointer, "$ref"), "$ref must be a string");
    SYN_ASSIGN_OR_RETURN(std::string target,
                         resolve_ref(ref.get<std::string>(), resource, child(pointer, "$ref")));
    Node n;
    n.kind = NodeKind::kRef;
    n.ref = target;
    return make(std::move(n));
  }
  for (const char* key : kUnsupportedKeywords) {
    if (s.contains(key))
      return unsupported(child(pointer, key), std::string(key) + " is not supported");
  }

  SYN_ASSIGN_OR_RETURN(NodePtr node, build_types(s, pointer, resource));
  if (auto it = s.find("nullable"); it != s.end()) {
    if (!it->is_boolean()) return invalid(child(pointer, "nullable"), "nullable must be a boolean");
    if (it->get<bool>()) node = any_of({node, type_node(NodeKind::kNull)});
  }
  if (auto it = s.find("enum"); it != s.end()) {
    if (!it->is_array()) return invalid(child(pointer, "enum"), "enum must be an array");
    Node values;
    values.kind = NodeKind::kConst;
    values.values.assign(it->begin(), it->end());
    SYN_ASSIGN_OR_RETURN(node, intersect(node, make(std::move(values))));
  }
  if (auto it = s.find("const"); it != s.end()) {
    Node values;
    values.kind = NodeKind::kConst;
    values.values.push_back(*it);
    SYN_ASSIGN_OR_RETURN(node, intersect(node, make(std::move(values))));
  }
  if (auto it = s.find("$ref"); it != s.end()) {
    if (!it->is_string()) return invalid(child(pointer, "$ref"), "$ref must be a string");
    SYN_ASSIGN_OR_RETURN(std::string target,
                         resolve_ref(it->get<std::string>(), resource, child(pointer, "$ref")));
    Node n;
    n.kind = NodeKind::kRef;
    n.ref = target;
    SYN_ASSIGN_OR_RETURN(node, intersect(node, make(std::move(n))));
  }
  if (auto it = s.find("allOf"); it != s.end()) {
    if (!it->is_array() || it->empty()) {
      return invalid(child(pointer, "allOf"), "allOf must be a non-empty array");
    }
    for (size_t i = 0; i < it->size(); ++i) {
      SYN_ASSIGN_OR_RETURN(NodePtr part,
                           build((*it)[i], child(child(pointer, "allOf"), i), resource));
      Result<NodePtr> merged = intersect(node, part);
      if (!merged.ok()) {
        return std::move(merged).take_status().with_field(child(child(pointer, "allOf"), i));
      }
      node = *merged;
    }
  }
  if (auto it = s.find("anyOf"); it != s.end()) {
    if (!it->is_array() || it->empty()) {
      return invalid(child(pointer, "anyOf"), "anyOf must be a non-empty array");
    }
    std::vector<NodePtr> options;
    for (size_t i = 0; i < it->size(); ++i) {
      SYN_ASSIGN_OR_RETURN(NodePtr part,
                           build((*it)[i], child(child(pointer, "anyOf"), i), resource));
      options.push_back(std::move(part));
    }
    SYN_ASSIGN_OR_RETURN(node, intersect(node, any_of(std::move(options))));
  }
  if (s.contains("oneOf")) {
    SYN_ASSIGN_OR_RETURN(node, build_one_of(s, pointer, resource, node));
  }
  if (auto it = s.find("if"); it != s.end() && (s.contains("then") || s.contains("else"))) {
    // (if and then) or (not if and else); without then/else, `if` asserts nothing.
    SYN_ASSIGN_OR_RETURN(NodePtr cond, build(*it, child(pointer, "if"), resource));
    NodePtr then_node = any_;
    NodePtr else_node = any_;
    if (auto t = s.find("then"); t != s.end()) {
      SYN_ASSIGN_OR_RETURN(then_node, build(*t, child(pointer, "then"), resource));
    }
    if (auto e = s.find("else"); e != s.end()) {
      SYN_ASSIGN_OR_RETURN(else_node, build(*e, child(pointer, "else"), resource));
    }
    SYN_ASSIGN_OR_RETURN(NodePtr yes, intersect(cond, then_node));
    SYN_ASSIGN_OR_RETURN(NodePtr not_cond, negate(cond, child(pointer, "if")));
    SYN_ASSIGN_OR_RETURN(NodePtr no, intersect(not_cond, else_node));
    SYN_ASSIGN_OR_RETURN(node, intersect(node, any_of({yes, no})));
  }
  if (auto it = s.find("not"); it != s.end()) {
    SYN_ASSIGN_OR_RETURN(NodePtr inner, build(*it, child(pointer, "not"), resource));
    SYN_ASSIGN_OR_RETURN(NodePtr negated, negate(inner, child(pointer, "not")));
    SYN_ASSIGN_OR_RETURN(node, intersect(node, negated));
  }
  return node;
}

Result<NodePtr> SchemaCompiler::build_one_of(const Json& s, const std::string& pointer,
                                             const std::string& resource, const NodePtr& base) {
  const std::string p = child(pointer, "oneOf");
  const Json& list = s["oneOf"];
  if (!list.is_array() || list.empty()) return invalid(p, "oneOf must be a non-empty array");
  std::vector<NodePtr> options;
  for (size_t i = 0; i < list.size(); ++i) {
    SYN_ASSIGN_OR_RETURN(NodePtr part, build(list[i], child(p, i), resource));
    // base and oneOf(b...) = oneOf(base and b...): the keywords beside oneOf (a `required`
    // discriminator, most often) can make the branches provably disjoint.
    SYN_ASSIGN_OR_RETURN(part, intersect(base, part));
    options.push_back(std::move(part));
  }
  // oneOf is "exactly one branch": the union over i of (branch i and no other branch). When
  // no value can match two branches that is just anyOf. Otherwise each branch is intersected
  // with the complements of those it may overlap, which is exact wherever `not` is (the
  // common oneOf of `required` lists, of discriminators that are not required, ...).
  // Measured on the MaskBench fixtures (5,636 schemas), before complements were used:
  // compiling overlapping oneOf as plain anyOf compiled 165 more schemas and passed 114 more,
  // but made 7 schemas accept invalid instances; so that is only an option.
  std::vector<std::vector<size_t>> overlapping(options.size());
  bool any_overlap = false;
  for (size_t i = 0; i < options.size(); ++i) {
    for (size_t j = i + 1; j < options.size(); ++j) {
      SYN_ASSIGN_OR_RETURN(bool apart, disjoint(options[i], options[j]));
      if (apart) continue;
      overlapping[i].push_back(j);
      overlapping[j].push_back(i);
      any_overlap = true;
    }
  }
  if (!any_overlap) return any_of(std::move(options));
  std::vector<NodePtr> exact;
  Status failed;
  for (size_t i = 0; i < options.size() && failed.ok(); ++i) {
    NodePtr only = options[i];
    for (size_t j : overlapping[i]) {
      Result<NodePtr> others = negate(options[j], child(p, j));
      if (others.ok()) others = intersect(only, *others);
      if (!others.ok()) {
        failed = std::move(others).take_status();
        break;
      }
      only = *others;
    }
    exact.push_back(std::move(only));
  }
  if (failed.ok()) return any_of(std::move(exact));
  if (failed.code() != ErrorCode::kUnsupportedSchema) return failed;
  if (!options_.one_of_as_any_of) {
    return Status(ErrorCode::kUnsupportedSchema,
                  "oneOf branches may overlap and cannot be made exclusive: " + failed.message())
        .with_field(failed.where().field.empty() ? p : failed.where().field);
  }
  note(p + ": compiled as anyOf; a value matching two branches is accepted though invalid");
  return any_of(std::move(options));
}

Result<NodePtr> SchemaCompiler::build_types(const Json& s, const std::string& pointer,
                                            const std::string& resource) {
  // Which JSON types the schema allows.
  bool allow[7] = {true, true, true, true, true, true, true};  // null bool int num str arr obj
  static constexpr const char* kTypeNames[7] = {"null",   "boolean", "integer", "number",
                                                "string", "array",   "object"};
  if (auto it = s.find("type"); it != s.end()) {
    std::vector<const Json*> names;
    if (it->is_string()) {
      names.push_back(&*it);
    } else if (it->is_array()) {
      for (const Json& t : *it) names.push_back(&t);
    } else {
      return invalid(child(pointer, "type"), "type must be a string or an array of strings");
    }
    std::fill(std::begin(allow), std::end(allow), false);
    for (const Json* t : names) {
      if (!t->is_string()) return invalid(child(pointer, "type"), "type names must be strings");
      const std::string& name = t->get_ref<const std::string&>();
      if (name == "any") {  // draft 3
        std::fill(std::begin(allow), std::end(allow), true);
        continue;
      }
      const auto* found = std::find(std::begin(kTypeNames), std::end(kTypeNames), name);
      if (found == std::end(kTypeNames)) {
        return invalid(child(pointer, "type"), "unknown type '" + name + "'");
      }
      allow[found - std::begin(kTypeNames)] = true;
    }
  }
  std::vector<NodePtr> options;
  bool all_plain = true;
  if (allow[0]) options.push_back(type_node(NodeKind::kNull));
  if (allow[1]) options.push_back(type_node(NodeKind::kBoolean));
  if (allow[2] || allow[3]) {
    SYN_ASSIGN_OR_RETURN(NodePtr n, build_number(s, pointer, !allow[3]));
    all_plain = all_plain && n == type_node(NodeKind::kNumber);
    options.push_back(std::move(n));
  }
  if (allow[4]) {
    SYN_ASSIGN_OR_RETURN(NodePtr n, build_string(s, pointer));
    all_plain = all_plain && n == type_node(NodeKind::kString);
    options.push_back(std::move(n));
  }
  if (allow[5]) {
    SYN_ASSIGN_OR_RETURN(NodePtr n, build_array(s, pointer, resource));
    all_plain = all_plain && n == type_node(NodeKind::kArray);
    options.push_back(std::move(n));
  }
  if (allow[6]) {
    SYN_ASSIGN_OR_RETURN(NodePtr n, build_object(s, pointer, resource));
    all_plain = all_plain && n == type_node(NodeKind::kObject);
    options.push_back(std::move(n));
  }
  if (all_plain && options.size() == 6) return any_;
  return any_of(std::move(options));
}

Result<NodePtr> SchemaCompiler::build_number(const Json& s, const std::string& pointer,
                                             bool integer) {
  NumberRange range;
  range.integer = integer;
  bool constrained = integer;
  const auto read = [&](const char* key) -> Result<std::optional<Decimal>> {
    auto it = s.find(key);
    if (it == s.end()) return std::optional<Decimal>();
    if (it->is_boolean()) return std::optional<Decimal>();  // draft-04 exclusive flags
    if (!it->is_number())
      return invalid(child(pointer, key), std::string(key) + " must be a number");
    return std::optional<Decimal>(decimal_of(*it));
  };
  const auto tighten_lower = [&](const Decimal& d, bool exclusive) {
    if (!range.lower || compare_decimal(d, *range.lower) > 0 ||
        (compare_decimal(d, *range.lower) == 0 && exclusive)) {
      range.lower = d;
      range.lower_exclusive = exclusive;
    }
    constrained = true;
  };
  const auto tighten_upper = [&](const Decimal& d, bool exclusive) {
    if (!range.upper || compare_decimal(d, *range.upper) < 0 ||
        (compare_decimal(d, *range.upper) == 0 && exclusive)) {
      range.upper = d;
      range.upper_exclusive = exclusive;
    }
    constrained = true;
  };
  SYN_ASSIGN_OR_RETURN(std::optional<Decimal> minimum, read("minimum"));
  SYN_ASSIGN_OR_RETURN(std::optional<Decimal> maximum, read("maximum"));
  SYN_ASSIGN_OR_RETURN(std::optional<Decimal> exclusive_minimum, read("exclusiveMinimum"));
  SYN_ASSIGN_OR_RETURN(std::optional<Decimal> exclusive_maximum, read("exclusiveMaximum"));
  const auto flag = [&](const char* key) {
    auto it = s.find(key);
    return it != s.end() && it->is_boolean() && it->get<bool>();
  };
  if (minimum) tighten_lower(*minimum, flag("exclusiveMinimum"));
  if (maximum) tighten_upper(*maximum, flag("exclusiveMaximum"));
  if (exclusive_minimum) tighten_lower(*exclusive_minimum, true);
  if (exclusive_maximum) tighten_upper(*exclusive_maximum, true);
  if (auto it = s.find("multipleOf"); it != s.end()) {
    if (!it->is_number())
      return invalid(child(pointer, "multipleOf"), "multipleOf must be a number");
    const Decimal m = decimal_of(*it);
    if (m.negative || m.is_zero()) {
      return invalid(child(pointer, "multipleOf"), "multipleOf must be greater than 0");
    }
    // Every integer is a multiple of 1; `multipleOf: 1` on a number makes it an integer.
    if (!(m.int_digits == "1" && m.frac_digits.empty())) {
      return unsupported(child(pointer, "multipleOf"), "multipleOf other than 1 is not supported");
    }
    range.integer = true;
    constrained = true;
  }
  if (!constrained) return type_node(NodeKind::kNumber);
  if (range.empty()) return nothing_;
  Node n;
  n.kind = NodeKind::kNumber;
  n.number = std::move(range);
  return make(std::move(n));
}

Result<NodePtr> SchemaCompiler::build_string(const Json& s, const std::string& pointer) {
  StringNode str;
  SYN_ASSIGN_OR_RETURN(std::optional<uint32_t> min_length, read_count(s, "minLength", pointer));
  SYN_ASSIGN_OR_RETURN(std::optional<uint32_t> max_length, read_count(s, "maxLength", pointer));
  if (min_length) str.min_length = *min_length;
  if (max_length) str.max_length = *max_length;
  if (auto it = s.find("pattern"); it != s.end()) {
    const std::string p = child(pointer, "pattern");
    if (!it->is_string()) return invalid(p, "pattern must be a string");
    Result<RegexId> r =
        compile_ecma_regex(rx(), it->get<std::string>(), CharEncoding::kJsonString, true);
    if (!r.ok()) {
      Status st = std::move(r).take_status();
      if (st.code() == ErrorCode::kUnsupportedSchema) return std::move(st).with_field(p);
      return invalid(p, "pattern: " + st.message());
    }
    str.body_regexes.push_back(*r);
  }
  if (auto it = s.find("format"); it != s.end()) {
    const std::string p = child(pointer, "format");
    if (!it->is_string()) return invalid(p, "format must be a string");
    Result<RegexId> r = format_regex(rx(), it->get<std::string>(), CharEncoding::kJsonString);
    if (!r.ok()) {
      Status st = std::move(r).take_status();
      return Status(ErrorCode::kUnsupportedSchema, st.message()).with_field(p);
    }
    str.body_regexes.push_back(*r);
  }
  if (!min_length && !max_length && str.body_regexes.empty()) return type_node(NodeKind::kString);
  if (str.min_length > str.max_length) return nothing_;
  // Emptiness costs a derivative exploration; only a combination of constraints can be
  // unsatisfiable in practice (GrammarBuilder::build still checks every lexeme).
  const size_t constraints = str.body_regexes.size() + (min_length || max_length ? 1 : 0);
  if (constraints > 1 && rx().is_empty_language(string_lexeme(str))) return nothing_;
  Node n;
  n.kind = NodeKind::kString;
  n.string = std::move(str);
  return make(std::move(n));
}

Result<NodePtr> SchemaCompiler::build_array(const Json& s, const std::string& pointer,
                                            const std::string& resource) {
  ArrayNode arr;
  arr.items = any_;
  bool constrained = false;
  auto items = s.find("items");
  auto prefix = s.find("prefixItems");
  if (prefix != s.end()) {
    const std::string p = child(pointer, "prefixItems");
    if (!prefix->is_array()) return invalid(p, "prefixItems must be an array");
    if (items != s.end() && items->is_array()) {
      return invalid(child(pointer, "items"), "items must be a schema beside prefixItems");
    }
    for (size_t i = 0; i < prefix->size(); ++i) {
      SYN_ASSIGN_OR_RETURN(NodePtr n, build((*prefix)[i], child(p, i), resource));
      arr.prefix_items.push_back(std::move(n));
    }
    constrained = true;
  }
  if (items != s.end()) {
    const std::string p = child(pointer, "items");
    if (items->is_array()) {
      // Draft 4-2019 tuple form; additionalItems then governs the rest.
      for (size_t i = 0; i < items->size(); ++i) {
        SYN_ASSIGN_OR_RETURN(NodePtr n, build((*items)[i], child(p, i), resource));
        arr.prefix_items.push_back(std::move(n));
      }
      if (auto add = s.find("additionalItems"); add != s.end()) {
        SYN_ASSIGN_OR_RETURN(arr.items, build(*add, child(pointer, "additionalItems"), resource));
      }
    } else {
      SYN_ASSIGN_OR_RETURN(arr.items, build(*items, p, resource));
    }
    constrained = true;
  }
  SYN_ASSIGN_OR_RETURN(std::optional<uint32_t> min_items, read_count(s, "minItems", pointer));
  SYN_ASSIGN_OR_RETURN(std::optional<uint32_t> max_items, read_count(s, "maxItems", pointer));
  if (min_items) arr.min_items = *min_items;
  if (max_items) arr.max_items = *max_items;
  constrained = constrained || min_items || max_items;
  if (auto it = s.find("uniqueItems"); it != s.end()) {
    if (!it->is_boolean())
      return invalid(child(pointer, "uniqueItems"), "uniqueItems must be a boolean");
    // With at most one item, every array is unique.
    if (it->get<bool>() && arr.max_items > 1) {
      return unsupported(child(pointer, "uniqueItems"), "uniqueItems: true is not supported");
    }
  }
  if (auto it = s.find("contains"); it != s.end()) {
    SYN_ASSIGN_OR_RETURN(std::optional<uint32_t> min_contains,
                         read_count(s, "minContains", pointer));
    if (s.contains("maxContains")) {
      return unsupported(child(pointer, "maxContains"), "maxContains is not supported");
    }
    // minContains 0 makes contains always true; above 1 it would need distinct witnesses.
    if (min_contains.value_or(1) > 1) {
      return unsupported(child(pointer, "minContains"), "minContains above 1 is not supported");
    }
    if (min_contains.value_or(1) == 1) {
      SYN_ASSIGN_OR_RETURN(NodePtr c, build(*it, child(pointer, "contains"), resource));
      arr.contains.push_back(std::move(c));
      constrained = true;
    }
  }
  if (auto it = s.find("unevaluatedItems");
      it != s.end() && !(*it == Json(true) || *it == Json::object())) {
    return unsupported(child(pointer, "unevaluatedItems"), "unevaluatedItems is not supported");
  }
  if (!constrained) return type_node(NodeKind::kArray);
  if (arr.min_items > arr.max_items) return nothing_;
  Node n;
  n.kind = NodeKind::kArray;
  n.array = std::move(arr);
  return make(std::move(n));
}

Result<NodePtr> SchemaCompiler::build_object(const Json& s, const std::string& pointer,
                                             const std::string& resource) {
  ObjectNode obj;
  obj.additional = any_;
  obj.key_lexeme = kNoRegex;
  bool constrained = false;
  if (auto it = s.find("properties"); it != s.end()) {
    const std::string p = child(pointer, "properties");
    if (!it->is_object()) return invalid(p, "properties must be an object");
    for (auto jt = it->begin(); jt != it->end(); ++jt) {
      SYN_ASSIGN_OR_RETURN(NodePtr n, build(jt.value(), child(p, jt.key()), resource));
      obj.properties.push_back({jt.key(), std::move(n)});
    }
    constrained = true;
  }
  if (auto it = s.find("required"); it != s.end()) {
    const std::string p = child(pointer, "required");
    if (!it->is_array()) return invalid(p, "required must be an array of strings");
    for (const Json& name : *it) {
      if (!name.is_string()) return invalid(p, "required must be an array of strings");
      if (std::find(obj.required.begin(), obj.required.end(), name.get<std::string>()) ==
          obj.required.end()) {
        obj.required.push_back(name.get<std::string>());
      }
    }
    constrained = true;
  }
  if (auto it = s.find("patternProperties"); it != s.end()) {
    const std::string p = child(pointer, "patternProperties");
    if (!it->is_object()) return invalid(p, "patternProperties must be an object");
    for (auto jt = it->begin(); jt != it->end(); ++jt) {
      Result<RegexId> r = compile_ecma_regex(rx(), jt.key(), CharEncoding::kJsonString, true);
      if (!r.ok()) {
        Status st = std::move(r).take_status();
        if (st.code() == ErrorCode::kUnsupportedSchema)
          return std::move(st).with_field(child(p, jt.key()));
        return invalid(child(p, jt.key()), "patternProperties: " + st.message());
      }
      SYN_ASSIGN_OR_RETURN(NodePtr n, build(jt.value(), child(p, jt.key()), resource));
      obj.pattern_properties.push_back({*r, std::move(n)});
    }
    constrained = true;
  }
  if (auto it = s.find("additionalProperties"); it != s.end()) {
    SYN_ASSIGN_OR_RETURN(obj.additional,
                         build(*it, child(pointer, "additionalProperties"), resource));
    constrained = true;
  }
  if (auto it = s.find("propertyNames"); it != s.end()) {
    const std::string p = child(pointer, "propertyNames");
    SYN_ASSIGN_OR_RETURN(NodePtr names, build(*it, p, resource));
    if (names != any_) {
      SYN_ASSIGN_OR_RETURN(NodePtr as_string, intersect(names, type_node(NodeKind::kString)));
      std::vector<NodePtr> pending = {as_string};
      std::vector<RegexId> alternatives;
      while (!pending.empty()) {
        NodePtr n = pending.back();
        pending.pop_back();
        if (n->kind == NodeKind::kString) {
          alternatives.push_back(string_lexeme(n->string));
        } else if (n->kind == NodeKind::kConst) {
          for (const Json& v : n->values) {
            if (v.is_string()) alternatives.push_back(rx().literal(canonical_dump(v)));
          }
        } else if (n->kind == NodeKind::kAnyOf) {
          pending.insert(pending.end(), n->options.begin(), n->options.end());
        } else if (n->kind == NodeKind::kRef) {
          SYN_ASSIGN_OR_RETURN(NodePtr target, deref(*n));
          SYN_ASSIGN_OR_RETURN(NodePtr narrowed, intersect(target, type_node(NodeKind::kString)));
          pending.push_back(narrowed);
        } else if (n->kind != NodeKind::kNothing) {
          return unsupported(p,
                             "propertyNames must describe strings by length, pattern, format "
                             "or enum");
        }
      }
      obj.key_lexeme = rx().alt(alternatives);
      constrained = true;
    }
  }
  SYN_ASSIGN_OR_RETURN(std::optional<uint32_t> min_p, read_count(s, "minProperties", pointer));
  SYN_ASSIGN_OR_RETURN(std::optional<uint32_t> max_p, read_count(s, "maxProperties", pointer));
  if (min_p) obj.min_properties = *min_p;
  if (max_p) obj.max_properties = *max_p;
  constrained = constrained || min_p || max_p;
  if (auto it = s.find("unevaluatedProperties");
      it != s.end() && !(*it == Json(true) || *it == Json::object())) {
    return unsupported(child(pointer, "unevaluatedProperties"),
                       "unevaluatedProperties is not supported");
  }
  NodePtr node = type_node(NodeKind::kObject);
  if (constrained && obj.min_properties > obj.max_properties) return nothing_;
  if (constrained) {
    Node n;
    n.kind = NodeKind::kObject;
    n.object = std::move(obj);
    node = make(std::move(n));
  }
  return apply_dependencies(s, pointer, resource, node);
}

Result<NodePtr> SchemaCompiler::apply_dependencies(const Json& s, const std::string& pointer,
                                                   const std::string& resource, NodePtr node) {
  // "If key k is present, the object also satisfies D" (D: a list of required keys, or a
  // schema) is (k absent) or (k present and D). Each such dependency may double the object's
  // alternatives, hence the bound.
  size_t expanded = 0;
  for (const char* key : {"dependencies", "dependentRequired", "dependentSchemas"}) {
    auto it = s.find(key);
    if (it == s.end()) continue;
    const std::string p = child(pointer, key);
    if (!it->is_object()) return invalid(p, std::string(key) + " must be an object");
    for (auto jt = it->begin(); jt != it->end(); ++jt) {
      const std::string& trigger = jt.key();
      const std::string q = child(p, trigger);
      NodePtr then_node;
      if (jt.value().is_array()) {
        Node req = *type_node(NodeKind::kObject);
        for (const Json& name : jt.value()) {
          if (!name.is_string()) return invalid(q, "dependency lists must hold key names");
          req.object.required.push_back(name.get<std::string>());
        }
        then_node = make(std::move(req));
      } else {
        SYN_ASSIGN_OR_RETURN(then_node, build(jt.value(), q, resource));
      }
      Node present = *type_node(NodeKind::kObject);
      present.object.required.push_back(trigger);
      // The dependency's keys first: an object usually names what a key depends on before it.
      SYN_ASSIGN_OR_RETURN(NodePtr when_present, intersect(then_node, make(std::move(present))));
      const bool required = node->kind == NodeKind::kObject &&
                            std::find(node->object.required.begin(), node->object.required.end(),
                                      trigger) != node->object.required.end();
      if (required) {
        SYN_ASSIGN_OR_RETURN(node, intersect(node, when_present));
        continue;
      }
      if (++expanded > kMaxDependencies) {
        return Status(ErrorCode::kSchemaTooComplex,
                      "more than " + std::to_string(kMaxDependencies) + " conditional dependencies")
            .with_field(q);
      }
      Node absent = *type_node(NodeKind::kObject);
      absent.object.properties.push_back({trigger, nothing_});
      SYN_ASSIGN_OR_RETURN(node, intersect(node, any_of({make(std::move(absent)), when_present})));
    }
  }
  return node;
}

// --- entry points ------------------------------------------------------------------------

Result<Symbol> SchemaCompiler::compile_into() {
  if (root_.is_object()) {
    auto it = root_.find("$schema");
    // Draft 3 gives `required`, `type` and `extends` other meanings; it is not read at all.
    if (it != root_.end() && it->is_string() &&
        it->get_ref<const std::string&>().find("draft-03") != std::string::npos) {
      return unsupported("/$schema", "draft-03 schemas are not supported");
    }
  }
  index_document();
  Node root_ref;
  root_ref.kind = NodeKind::kRef;
  root_ref.ref = "";
  refs_[""].schema = &root_;
  SYN_ASSIGN_OR_RETURN(NodePtr root, deref(root_ref));
  if (root->kind == NodeKind::kNothing) {
    return unsupported("", "the schema accepts no value");
  }
  // Referencing the root through its nonterminal makes `$ref: "#"` recursion share it.
  SYN_ASSIGN_OR_RETURN(Symbol start, emit(make(std::move(root_ref))));
  SYN_RETURN_IF_ERROR(check_budget(""));
  return start;
}

Result<Grammar> SchemaCompiler::compile() {
  SYN_ASSIGN_OR_RETURN(const Symbol start, compile_into());
  NonterminalId start_nt;
  if (start.is_lexeme()) {
    start_nt = gb_.add_nonterminal("start");
    gb_.add_rule(start_nt, {start});
  } else {
    start_nt = start.id();
  }
  Result<Grammar> g = std::move(gb_).build(start_nt);
  if (!g.ok()) return unsupported("", "the schema accepts no value");
  return g;
}

Result<Grammar> SchemaCompiler::compile_any(bool object_only) {
  const Symbol s = object_only ? any_object() : any_value();
  NonterminalId start = gb_.add_nonterminal("start");
  gb_.add_rule(start, {s});
  return std::move(gb_).build(start);
}

}  // namespace json_schema_internal

Result<Grammar> compile_json_schema(const nlohmann::ordered_json& schema,
                                    const JsonSchemaOptions& options) {
  json_schema_internal::SchemaCompiler compiler(schema, options);
  Result<Grammar> g = compiler.compile();
  // An error found where no keyword is at hand (merging, emitting) is about the whole schema.
  if (!g.ok()) return std::move(g).take_status().with_field("/");
  return g;
}

Result<Grammar> any_json_grammar(const JsonSchemaOptions& options) {
  const nlohmann::ordered_json schema(true);
  json_schema_internal::SchemaCompiler compiler(schema, options);
  return compiler.compile_any(false);
}

Result<Symbol> add_json_schema(GrammarBuilder& builder, const nlohmann::ordered_json& schema,
                               const JsonSchemaOptions& options) {
  json_schema_internal::SchemaCompiler compiler(schema, options, builder);
  Result<Symbol> start = compiler.compile_into();
  if (!start.ok()) return std::move(start).take_status().with_field("/");
  return start;
}

Result<Symbol> add_any_json_object(GrammarBuilder& builder, const JsonSchemaOptions& options) {
  const nlohmann::ordered_json schema(true);
  json_schema_internal::SchemaCompiler compiler(schema, options, builder);
  return compiler.any_object();
}

Result<Grammar> json_object_grammar(const JsonSchemaOptions& options) {
  const nlohmann::ordered_json schema(true);
  json_schema_internal::SchemaCompiler compiler(schema, options);
  return compiler.compile_any(true);
}

}  // namespace synapse::constrain
