// SPDX-License-Identifier: Apache-2.0
// Algebra on schema nodes: intersection (allOf, sibling keywords), membership of a value
// (enum/const filtering) and disjointness (oneOf); negation (`not`) is in
// json_schema_negate.cc. Each answers exactly or fails with unsupported_schema; none
// approximates.
#include <algorithm>
#include <string>
#include <unordered_set>
#include <utility>

#include "constrain/ecma_regex.h"
#include "constrain/json_schema_internal.h"

namespace synapse::constrain::json_schema_internal {
namespace {

// Recursion through $ref while checking one value never consumes the value, so a cycle of
// references would not end without a bound.
constexpr int kMaxAcceptDepth = 200;
// Disjointness is a best effort proof: past this depth the answer is "not provable".
constexpr int kMaxDisjointDepth = 24;
// Bound on the alternatives one intersection may distribute into.
constexpr size_t kMaxAlternatives = 4096;
// is_empty_language's exploration budget when proving two lexemes disjoint.
constexpr size_t kEmptinessBudget = 4000;

bool regex_matches(RegexBuilder& rx, RegexId r, std::string_view text) {
  for (const char c : text) {
    r = rx.derive(r, static_cast<uint8_t>(c));
    if (rx.is_nothing(r)) return false;
  }
  return rx.nullable(r);
}

const NodePtr& element_at(const ArrayNode& a, size_t i) {
  return i < a.prefix_items.size() ? a.prefix_items[i] : a.items;
}

bool is_required(const ObjectNode& o, const std::string& name) {
  return std::find(o.required.begin(), o.required.end(), name) != o.required.end();
}

const NodePtr* declared(const ObjectNode& o, const std::string& name) {
  for (const PropertyNode& p : o.properties) {
    if (p.name == name) return &p.schema;
  }
  return nullptr;
}

}  // namespace

std::string canonical_dump(const Json& v) {
  return v.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

bool json_equal(const Json& a, const Json& b) {
  if (a.is_number() && b.is_number()) return compare_decimal(decimal_of(a), decimal_of(b)) == 0;
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!json_equal(a[i], b[i])) return false;
    }
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto jt = b.find(it.key());
      if (jt == b.end() || !json_equal(it.value(), *jt)) return false;
    }
    return true;
  }
  return a == b;
}

const SharedNodes& shared_nodes() {
  // One node per plain type, shared by every compiler, so "no constraint" is recognised by
  // address. Plain nodes hold no regex ids, so sharing them across builders is safe.
  static const SharedNodes nodes = [] {
    SharedNodes s;
    const auto of_kind = [](NodeKind k) {
      Node n;
      n.kind = k;
      return n;
    };
    s.any = SchemaCompiler::make(Node{});
    s.nothing = SchemaCompiler::make(of_kind(NodeKind::kNothing));
    s.null = SchemaCompiler::make(of_kind(NodeKind::kNull));
    s.boolean = SchemaCompiler::make(of_kind(NodeKind::kBoolean));
    s.number = SchemaCompiler::make(of_kind(NodeKind::kNumber));
    s.string = SchemaCompiler::make(of_kind(NodeKind::kString));
    Node array = of_kind(NodeKind::kArray);
    array.array.items = s.any;
    s.array = SchemaCompiler::make(std::move(array));
    Node object = of_kind(NodeKind::kObject);
    object.object.additional = s.any;
    object.object.key_lexeme = kNoRegex;
    s.object = SchemaCompiler::make(std::move(object));
    return s;
  }();
  return nodes;
}

NodePtr SchemaCompiler::type_node(NodeKind kind) const {
  const SharedNodes& s = shared_nodes();
  switch (kind) {
    case NodeKind::kNull:
      return s.null;
    case NodeKind::kBoolean:
      return s.boolean;
    case NodeKind::kNumber:
      return s.number;
    case NodeKind::kString:
      return s.string;
    case NodeKind::kArray:
      return s.array;
    case NodeKind::kObject:
      return s.object;
    default:
      SYN_CHECK(false, "type_node of a non-type kind");
      return s.any;
  }
}

NodePtr SchemaCompiler::any_of(std::vector<NodePtr> options) const {
  std::vector<NodePtr> flat;
  std::unordered_set<const Node*> seen;
  std::vector<NodePtr> pending(options.rbegin(), options.rend());
  while (!pending.empty()) {
    NodePtr n = std::move(pending.back());
    pending.pop_back();
    if (n->kind == NodeKind::kAny) return any_;
    if (n->kind == NodeKind::kNothing) continue;
    if (n->kind == NodeKind::kAnyOf) {
      pending.insert(pending.end(), n->options.rbegin(), n->options.rend());
      continue;
    }
    if (seen.insert(n.get()).second) flat.push_back(std::move(n));
  }
  if (flat.empty()) return nothing_;
  if (flat.size() == 1) return flat[0];
  Node n;
  n.kind = NodeKind::kAnyOf;
  n.options = std::move(flat);
  return make(std::move(n));
}

RegexId SchemaCompiler::body_complement(RegexId body) {
  // A complement over bytes also holds quotes and broken escapes; string bodies must stay
  // sequences of encoded characters (string_lexeme relies on it).
  const RegexId one_char = any_char();
  return rx().intersect(rx().repeat(one_char, 0, kUnbounded), rx().complement(body));
}

// --- references ----------------------------------------------------------------------

std::vector<std::string> SchemaCompiler::ref_literals(const Node& ref_node) const {
  if (!ref_node.ref.empty() && ref_node.ref[0] == kCombinedRef) {
    return refs_.at(ref_node.ref).literals;
  }
  return {ref_node.ref};
}

NodePtr SchemaCompiler::combined_ref(std::vector<std::string> literals,
                                     const std::string& pointer) {
  std::sort(literals.begin(), literals.end());
  literals.erase(std::unique(literals.begin(), literals.end()), literals.end());
  for (const std::string& l : literals) {
    // A and not A.
    if (l[0] != '!' && std::binary_search(literals.begin(), literals.end(), "!" + l)) {
      return nothing_;
    }
  }
  std::string key(1, kCombinedRef);
  if (literals.size() == 1 && literals[0][0] != '!') {
    key = literals[0];  // a plain reference to a schema of the document
  } else {
    for (const std::string& l : literals) key += l + '\x01';
  }
  RefTarget& target = refs_[key];
  if (!target.ref_node) {
    if (key[0] == kCombinedRef) {
      target.literals = std::move(literals);
      target.pointer = pointer;
    }
    Node n;
    n.kind = NodeKind::kRef;
    n.ref = key;
    target.ref_node = make(std::move(n));
  }
  return target.ref_node;
}

// --- intersection ------------------------------------------------------------------------

Result<NodePtr> SchemaCompiler::intersect(const NodePtr& a, const NodePtr& b) {
  const Nesting nesting(*this);
  SYN_RETURN_IF_ERROR(check_budget(""));
  if (a == b || b->kind == NodeKind::kAny) return a;
  if (a->kind == NodeKind::kAny) return b;
  if (a->kind == NodeKind::kNothing || b->kind == NodeKind::kNothing) return nothing_;
  if (a->kind == NodeKind::kRef && b->kind == NodeKind::kRef) {
    if (a->ref == b->ref) return a;
    std::vector<std::string> literals = ref_literals(*a);
    for (std::string& l : ref_literals(*b)) literals.push_back(std::move(l));
    return combined_ref(std::move(literals), "");
  }
  if (a->kind == NodeKind::kRef) {
    SYN_ASSIGN_OR_RETURN(NodePtr target, deref(*a));
    return intersect(target, b);
  }
  if (b->kind == NodeKind::kRef) {
    SYN_ASSIGN_OR_RETURN(NodePtr target, deref(*b));
    return intersect(a, target);
  }
  // Distribute over unions, keeping the operands' order: the left side's properties come
  // first in a merged object.
  if (a->kind == NodeKind::kAnyOf || b->kind == NodeKind::kAnyOf) {
    // Distributing multiplies alternatives; past a bound the grammar would be too large.
    const size_t product = (a->kind == NodeKind::kAnyOf ? a->options.size() : 1) *
                           (b->kind == NodeKind::kAnyOf ? b->options.size() : 1);
    if (product > kMaxAlternatives) {
      return Status(
          ErrorCode::kSchemaTooComplex,
          "merging schemas needs more than " + std::to_string(kMaxAlternatives) + " alternatives");
    }
    const bool left = a->kind == NodeKind::kAnyOf;
    std::vector<NodePtr> parts;
    for (const NodePtr& option : (left ? a : b)->options) {
      SYN_ASSIGN_OR_RETURN(NodePtr part, left ? intersect(option, b) : intersect(a, option));
      parts.push_back(std::move(part));
    }
    return any_of(std::move(parts));
  }
  for (const auto& [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
    if (x->kind == NodeKind::kConst) {
      Node n;
      n.kind = NodeKind::kConst;
      for (const Json& v : x->values) {
        SYN_ASSIGN_OR_RETURN(bool ok, accepts(y, v));
        if (ok) n.values.push_back(v);
      }
      if (n.values.empty()) return nothing_;
      return make(std::move(n));
    }
  }
  return intersect_same_kind(a, b);
}

Result<NodePtr> SchemaCompiler::intersect_same_kind(const NodePtr& a, const NodePtr& b) {
  if (a->kind != b->kind) return nothing_;
  switch (a->kind) {
    case NodeKind::kNull:
    case NodeKind::kBoolean:
      return a;
    case NodeKind::kNumber: {
      if (a == type_node(NodeKind::kNumber)) return b;
      if (b == type_node(NodeKind::kNumber)) return a;
      NumberRange r = a->number;
      const NumberRange& o = b->number;
      r.integer = r.integer || o.integer;
      r.non_integer = r.non_integer || o.non_integer;
      if (o.lower && (!r.lower || compare_decimal(*o.lower, *r.lower) > 0 ||
                      (compare_decimal(*o.lower, *r.lower) == 0 && o.lower_exclusive))) {
        r.lower = o.lower;
        r.lower_exclusive = o.lower_exclusive;
      }
      if (o.upper && (!r.upper || compare_decimal(*o.upper, *r.upper) < 0 ||
                      (compare_decimal(*o.upper, *r.upper) == 0 && o.upper_exclusive))) {
        r.upper = o.upper;
        r.upper_exclusive = o.upper_exclusive;
      }
      if (r.empty()) return nothing_;
      Node n;
      n.kind = NodeKind::kNumber;
      n.number = std::move(r);
      return make(std::move(n));
    }
    case NodeKind::kString: {
      if (a == type_node(NodeKind::kString)) return b;
      if (b == type_node(NodeKind::kString)) return a;
      StringNode s = a->string;
      s.min_length = std::max(s.min_length, b->string.min_length);
      s.max_length = std::min(s.max_length, b->string.max_length);
      s.body_regexes.insert(s.body_regexes.end(), b->string.body_regexes.begin(),
                            b->string.body_regexes.end());
      if (s.min_length > s.max_length || rx().is_empty_language(string_lexeme(s))) {
        return nothing_;
      }
      Node n;
      n.kind = NodeKind::kString;
      n.string = std::move(s);
      return make(std::move(n));
    }
    case NodeKind::kArray: {
      if (a == type_node(NodeKind::kArray)) return b;
      if (b == type_node(NodeKind::kArray)) return a;
      const ArrayNode& x = a->array;
      const ArrayNode& y = b->array;
      ArrayNode r;
      r.min_items = std::max(x.min_items, y.min_items);
      r.max_items = std::min(x.max_items, y.max_items);
      if (r.min_items > r.max_items) return nothing_;
      const size_t prefix = std::max(x.prefix_items.size(), y.prefix_items.size());
      for (size_t i = 0; i < prefix; ++i) {
        SYN_ASSIGN_OR_RETURN(NodePtr item, intersect(element_at(x, i), element_at(y, i)));
        r.prefix_items.push_back(std::move(item));
      }
      SYN_ASSIGN_OR_RETURN(r.items, intersect(x.items, y.items));
      r.contains = x.contains;
      r.contains.insert(r.contains.end(), y.contains.begin(), y.contains.end());
      Node n;
      n.kind = NodeKind::kArray;
      n.array = std::move(r);
      return make(std::move(n));
    }
    case NodeKind::kObject: {
      if (a == type_node(NodeKind::kObject)) return b;
      if (b == type_node(NodeKind::kObject)) return a;
      return intersect_objects(*a, *b);
    }
    default:
      SYN_CHECK(false, "intersect_same_kind on a non-type node");
      return nothing_;
  }
}

Result<NodePtr> SchemaCompiler::intersect_objects(const Node& a, const Node& b) {
  const ObjectNode& x = a.object;
  const ObjectNode& y = b.object;
  // A key matching one side's pattern but no pattern of the other is governed there by
  // additionalProperties; concatenated patterns cannot say that.
  if ((!x.pattern_properties.empty() && y.additional != any_) ||
      (!y.pattern_properties.empty() && x.additional != any_)) {
    return Status(ErrorCode::kUnsupportedSchema,
                  "allOf merging patternProperties with additionalProperties is not supported");
  }
  // The declared schema of `name` on one side, patterns left to the merged node.
  const auto side = [&](const ObjectNode& o, const std::string& name) -> NodePtr {
    if (const NodePtr* d = declared(o, name)) return *d;
    const std::string body = canonical_dump(Json(name));
    const std::string_view inner(body.data() + 1, body.size() - 2);
    for (const PatternPropertyNode& p : o.pattern_properties) {
      if (regex_matches(rx(), p.key_body, inner)) return any_;
    }
    return o.additional;
  };
  ObjectNode r;
  std::vector<std::string> names;
  for (const PropertyNode& p : x.properties) names.push_back(p.name);
  for (const PropertyNode& p : y.properties) {
    if (!declared(x, p.name)) names.push_back(p.name);
  }
  for (const std::string& name : names) {
    SYN_ASSIGN_OR_RETURN(NodePtr merged, intersect(side(x, name), side(y, name)));
    r.properties.push_back({name, std::move(merged)});
  }
  r.required = x.required;
  for (const std::string& name : y.required) {
    if (!is_required(r, name)) r.required.push_back(name);
  }
  r.pattern_properties = x.pattern_properties;
  r.pattern_properties.insert(r.pattern_properties.end(), y.pattern_properties.begin(),
                              y.pattern_properties.end());
  SYN_ASSIGN_OR_RETURN(r.additional, intersect(x.additional, y.additional));
  r.key_lexeme = x.key_lexeme == kNoRegex   ? y.key_lexeme
                 : y.key_lexeme == kNoRegex ? x.key_lexeme
                                            : rx().intersect(x.key_lexeme, y.key_lexeme);
  r.min_properties = std::max(x.min_properties, y.min_properties);
  r.max_properties = std::min(x.max_properties, y.max_properties);
  if (r.min_properties > r.max_properties) return nothing_;
  r.witnesses = x.witnesses;
  r.witnesses.insert(r.witnesses.end(), y.witnesses.begin(), y.witnesses.end());
  Node n;
  n.kind = NodeKind::kObject;
  n.object = std::move(r);
  return make(std::move(n));
}

Result<NodePtr> SchemaCompiler::schema_for_key(const ObjectNode& o, const std::string& name) {
  const std::string key = canonical_dump(Json(name));
  if (o.key_lexeme != kNoRegex && !regex_matches(rx(), o.key_lexeme, key)) return nothing_;
  const std::string_view body(key.data() + 1, key.size() - 2);
  const NodePtr* d = declared(o, name);
  NodePtr result = d ? *d : nullptr;
  for (const PatternPropertyNode& p : o.pattern_properties) {
    if (!regex_matches(rx(), p.key_body, body)) continue;
    if (!result) {
      result = p.schema;
    } else {
      SYN_ASSIGN_OR_RETURN(result, intersect(result, p.schema));
    }
  }
  return result ? result : o.additional;
}

// --- membership --------------------------------------------------------------------------

bool SchemaCompiler::string_matches(const StringNode& s, const std::string& text) {
  return regex_matches(rx(), string_lexeme(s), text);
}

Result<bool> SchemaCompiler::accepts(const NodePtr& n, const Json& v, int depth) {
  if (depth > kMaxAcceptDepth) {
    return unsupported(n->ref, "$ref chain too deep while checking an enum or const value");
  }
  switch (n->kind) {
    case NodeKind::kAny:
      return true;
    case NodeKind::kNothing:
      return false;
    case NodeKind::kNull:
      return v.is_null();
    case NodeKind::kBoolean:
      return v.is_boolean();
    case NodeKind::kNumber:
      return v.is_number() && n->number.contains(decimal_of(v));
    case NodeKind::kString:
      return v.is_string() && string_matches(n->string, canonical_dump(v));
    case NodeKind::kConst:
      return std::any_of(n->values.begin(), n->values.end(),
                         [&](const Json& c) { return json_equal(c, v); });
    case NodeKind::kAnyOf:
      for (const NodePtr& option : n->options) {
        SYN_ASSIGN_OR_RETURN(bool ok, accepts(option, v, depth + 1));
        if (ok) return true;
      }
      return false;
    case NodeKind::kRef: {
      SYN_ASSIGN_OR_RETURN(NodePtr target, deref(*n));
      return accepts(target, v, depth + 1);
    }
    case NodeKind::kArray: {
      if (!v.is_array()) return false;
      const ArrayNode& a = n->array;
      if (v.size() < a.min_items || v.size() > a.max_items) return false;
      for (size_t i = 0; i < v.size(); ++i) {
        SYN_ASSIGN_OR_RETURN(bool ok, accepts(element_at(a, i), v[i], depth + 1));
        if (!ok) return false;
      }
      for (const NodePtr& c : a.contains) {
        bool found = false;
        for (size_t i = 0; i < v.size() && !found; ++i) {
          SYN_ASSIGN_OR_RETURN(found, accepts(c, v[i], depth + 1));
        }
        if (!found) return false;
      }
      return true;
    }
    case NodeKind::kObject: {
      if (!v.is_object()) return false;
      const ObjectNode& o = n->object;
      if (v.size() < o.min_properties || v.size() > o.max_properties) return false;
      for (const std::string& name : o.required) {
        if (!v.contains(name)) return false;
      }
      for (auto it = v.begin(); it != v.end(); ++it) {
        SYN_ASSIGN_OR_RETURN(NodePtr schema, schema_for_key(o, it.key()));
        SYN_ASSIGN_OR_RETURN(bool ok, accepts(schema, it.value(), depth + 1));
        if (!ok) return false;
      }
      for (const WitnessNode& w : o.witnesses) {
        bool found = false;
        for (auto it = v.begin(); it != v.end() && !found; ++it) {
          if (!regex_matches(rx(), w.key_lexeme, canonical_dump(Json(it.key())))) continue;
          SYN_ASSIGN_OR_RETURN(found, accepts(w.value, it.value(), depth + 1));
        }
        if (!found) return false;
      }
      return true;
    }
  }
  return false;
}

// --- disjointness ------------------------------------------------------------------------

Result<bool> SchemaCompiler::disjoint(const NodePtr& a, const NodePtr& b, int depth) {
  if (depth > kMaxDisjointDepth) return false;
  if (a->kind == NodeKind::kNothing || b->kind == NodeKind::kNothing) return true;
  if (a->kind == NodeKind::kAny || b->kind == NodeKind::kAny) return false;
  for (const auto& [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
    if (x->kind == NodeKind::kRef) {
      Result<NodePtr> target = deref(*x);
      // A reference still being built (recursion) cannot be looked into: not provable.
      if (!target.ok()) return false;
      return disjoint(*target, y, depth + 1);
    }
  }
  for (const auto& [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
    if (x->kind == NodeKind::kAnyOf) {
      for (const NodePtr& option : x->options) {
        SYN_ASSIGN_OR_RETURN(bool apart, disjoint(option, y, depth + 1));
        if (!apart) return false;
      }
      return true;
    }
  }
  for (const auto& [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
    if (x->kind == NodeKind::kConst) {
      for (const Json& v : x->values) {
        Result<bool> ok = accepts(y, v);
        if (!ok.ok() || *ok) return false;
      }
      return true;
    }
  }
  if (a->kind != b->kind) return true;
  switch (a->kind) {
    case NodeKind::kNull:
    case NodeKind::kBoolean:
      return false;
    case NodeKind::kNumber: {
      SYN_ASSIGN_OR_RETURN(NodePtr both, intersect_same_kind(a, b));
      return both->kind == NodeKind::kNothing;
    }
    case NodeKind::kString:
      return rx().is_empty_language(
          rx().intersect(string_lexeme(a->string), string_lexeme(b->string)), kEmptinessBudget);
    case NodeKind::kArray: {
      const ArrayNode& x = a->array;
      const ArrayNode& y = b->array;
      if (x.max_items < y.min_items || y.max_items < x.min_items) return true;
      // Items both sides require, at the same index, that no value can satisfy at once.
      const size_t both = std::min(x.min_items, y.min_items);
      const size_t look =
          std::min<size_t>(both, std::max(x.prefix_items.size(), y.prefix_items.size()) + 1);
      for (size_t i = 0; i < look; ++i) {
        SYN_ASSIGN_OR_RETURN(bool apart, disjoint(element_at(x, i), element_at(y, i), depth + 1));
        if (apart) return true;
      }
      return false;
    }
    case NodeKind::kObject: {
      const ObjectNode& x = a->object;
      const ObjectNode& y = b->object;
      if (x.max_properties < y.min_properties || y.max_properties < x.min_properties) return true;
      // A key one side requires must be present in a common instance, so its value would
      // have to satisfy both sides' schemas for that key.
      for (const auto& [p, q] : {std::pair{&x, &y}, std::pair{&y, &x}}) {
        for (const std::string& name : p->required) {
          Result<NodePtr> sp = schema_for_key(*p, name);
          Result<NodePtr> sq = schema_for_key(*q, name);
          if (!sp.ok() || !sq.ok()) continue;
          SYN_ASSIGN_OR_RETURN(bool apart, disjoint(*sp, *sq, depth + 1));
          if (apart) return true;
        }
      }
      return false;
    }
    default:
      return false;
  }
}

}  // namespace synapse::constrain::json_schema_internal
