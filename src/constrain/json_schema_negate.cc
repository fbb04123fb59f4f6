// SPDX-License-Identifier: Apache-2.0
// Negation of schema nodes (`not`, and the complements that make overlapping oneOf branches
// exclusive): exact where the complement is expressible, unsupported_schema where it is not.
#include <algorithm>
#include <string>
#include <unordered_set>
#include <utility>

#include "constrain/ecma_regex.h"
#include "constrain/json_schema_internal.h"

namespace synapse::constrain::json_schema_internal {

Result<NodePtr> SchemaCompiler::negate(const NodePtr& n, const std::string& pointer) {
  const Nesting nesting(*this);
  SYN_RETURN_IF_ERROR(check_budget(pointer));
  switch (n->kind) {
    case NodeKind::kAny:
      return nothing_;
    case NodeKind::kNothing:
      return any_;
    case NodeKind::kRef: {
      // not(A and B ...) = not A or not B ...; each complement is a reference of its own.
      std::vector<NodePtr> parts;
      for (const std::string& l : ref_literals(*n)) {
        parts.push_back(combined_ref({l[0] == '!' ? l.substr(1) : "!" + l}, pointer));
      }
      return any_of(std::move(parts));
    }
    case NodeKind::kAnyOf: {
      NodePtr result = any_;
      for (const NodePtr& option : n->options) {
        SYN_ASSIGN_OR_RETURN(NodePtr part, negate(option, pointer));
        SYN_ASSIGN_OR_RETURN(result, intersect(result, part));
      }
      return result;
    }
    case NodeKind::kConst: {
      // Every type stays, less the listed values.
      std::vector<NodePtr> parts;
      bool has_null = false, has_true = false, has_false = false;
      std::vector<Decimal> numbers;
      bool has_string = false;
      for (const Json& v : n->values) {
        if (v.is_null()) {
          has_null = true;
        } else if (v.is_boolean()) {
          (v.get<bool>() ? has_true : has_false) = true;
        } else if (v.is_number()) {
          numbers.push_back(decimal_of(v));
        } else if (v.is_string()) {
          has_string = true;
        } else {
          return unsupported(pointer, "`not` of an array or object value is not supported");
        }
      }
      if (!has_null) parts.push_back(type_node(NodeKind::kNull));
      if (!has_true || !has_false) {
        Node b;
        b.kind = NodeKind::kConst;
        if (!has_true) b.values.push_back(Json(true));
        if (!has_false) b.values.push_back(Json(false));
        parts.push_back(make(std::move(b)));
      }
      // The numbers between the listed ones, as open intervals.
      std::sort(numbers.begin(), numbers.end(),
                [](const Decimal& l, const Decimal& r) { return compare_decimal(l, r) < 0; });
      for (size_t i = 0; i <= numbers.size(); ++i) {
        Node num;
        num.kind = NodeKind::kNumber;
        if (i > 0) {
          num.number.lower = numbers[i - 1];
          num.number.lower_exclusive = true;
        }
        if (i < numbers.size()) {
          num.number.upper = numbers[i];
          num.number.upper_exclusive = true;
        }
        if (!num.number.empty()) {
          parts.push_back(make(std::move(num)));
        }
      }
      if (!has_string) {
        parts.push_back(type_node(NodeKind::kString));
      } else {
        // Bodies other than the listed ones.
        Node s;
        s.kind = NodeKind::kString;
        std::vector<RegexId> bodies;
        for (const Json& v : n->values) {
          if (!v.is_string()) continue;
          const std::string d = canonical_dump(v);
          bodies.push_back(rx().literal(std::string_view(d).substr(1, d.size() - 2)));
        }
        s.string.body_regexes.push_back(body_complement(rx().alt(bodies)));
        parts.push_back(make(std::move(s)));
      }
      parts.push_back(type_node(NodeKind::kArray));
      parts.push_back(type_node(NodeKind::kObject));
      return any_of(std::move(parts));
    }
    default:
      return negate_typed(n, pointer);
  }
}

Result<NodePtr> SchemaCompiler::negate_typed(const NodePtr& n, const std::string& pointer) {
  // All other types, plus the values of this type that break its constraints.
  std::vector<NodePtr> parts;
  for (NodeKind k : {NodeKind::kNull, NodeKind::kBoolean, NodeKind::kNumber, NodeKind::kString,
                     NodeKind::kArray, NodeKind::kObject}) {
    if (k != n->kind) parts.push_back(type_node(k));
  }
  if (n == type_node(n->kind) || n->kind == NodeKind::kNull || n->kind == NodeKind::kBoolean) {
    return any_of(std::move(parts));
  }
  switch (n->kind) {
    case NodeKind::kNumber: {
      // not(integer and range) = non-integers, or numbers outside the range.
      const NumberRange& r = n->number;
      if (r.integer || r.non_integer) {
        Node other;
        other.kind = NodeKind::kNumber;
        other.number.integer = r.non_integer;
        other.number.non_integer = r.integer;
        parts.push_back(make(std::move(other)));
      }
      if (r.lower) {
        Node below;
        below.kind = NodeKind::kNumber;
        below.number.upper = r.lower;
        below.number.upper_exclusive = !r.lower_exclusive;
        parts.push_back(make(std::move(below)));
      }
      if (r.upper) {
        Node above;
        above.kind = NodeKind::kNumber;
        above.number.lower = r.upper;
        above.number.lower_exclusive = !r.upper_exclusive;
        parts.push_back(make(std::move(above)));
      }
      return any_of(std::move(parts));
    }
    case NodeKind::kString: {
      // string_lexeme(body) = quote body quote, so complementing the body within strings is
      // complementing the lexeme.
      Node s;
      s.kind = NodeKind::kString;
      StringNode full = n->string;
      const RegexId one_char = any_char();
      std::vector<RegexId> body = full.body_regexes;
      body.push_back(rx().repeat(one_char, full.min_length, full.max_length));
      s.string.body_regexes.push_back(body_complement(rx().intersect(body)));
      parts.push_back(make(std::move(s)));
      return any_of(std::move(parts));
    }
    case NodeKind::kArray: {
      const ArrayNode& a = n->array;
      const auto array_with = [&](auto&& edit) {
        Node m = *type_node(NodeKind::kArray);
        edit(m.array);
        parts.push_back(make(std::move(m)));
      };
      // An item that breaks its schema.
      if (a.prefix_items.empty() && a.items != any_) {
        SYN_ASSIGN_OR_RETURN(NodePtr bad, negate(a.items, pointer));
        array_with([&](ArrayNode& x) { x.contains.push_back(bad); });
      } else if (!a.prefix_items.empty()) {
        if (a.items != any_) {
          return unsupported(pointer,
                             "`not` of an array schema with both prefix items and "
                             "items is not supported");
        }
        for (size_t j = 0; j < a.prefix_items.size(); ++j) {
          if (a.prefix_items[j] == any_) continue;
          SYN_ASSIGN_OR_RETURN(NodePtr bad, negate(a.prefix_items[j], pointer));
          array_with([&](ArrayNode& x) {
            x.prefix_items.assign(j, any_);
            x.prefix_items.push_back(bad);
            x.min_items = static_cast<uint32_t>(j + 1);
          });
        }
      }
      // No item matching a contains schema.
      for (const NodePtr& c : a.contains) {
        SYN_ASSIGN_OR_RETURN(NodePtr none, negate(c, pointer));
        array_with([&](ArrayNode& x) { x.items = none; });
      }
      if (a.min_items > 0) {
        Node fewer = *type_node(NodeKind::kArray);
        fewer.array.max_items = a.min_items - 1;
        parts.push_back(make(std::move(fewer)));
      }
      if (a.max_items != kUnbounded) {
        Node more = *type_node(NodeKind::kArray);
        more.array.min_items = a.max_items + 1;
        parts.push_back(make(std::move(more)));
      }
      return any_of(std::move(parts));
    }
    case NodeKind::kObject: {
      const ObjectNode& o = n->object;
      if (!o.witnesses.empty()) {
        return unsupported(pointer, "`not` of a negated object schema is not supported");
      }
      const auto object_with = [&](auto&& edit) {
        Node m = *type_node(NodeKind::kObject);
        edit(m.object);
        parts.push_back(make(std::move(m)));
      };
      const auto witness = [&](RegexId key_lexeme, NodePtr value) {
        object_with([&](ObjectNode& x) { x.witnesses.push_back({key_lexeme, std::move(value)}); });
      };
      // Missing one required key.
      for (const std::string& name : o.required) {
        object_with([&](ObjectNode& x) { x.properties.push_back({name, nothing_}); });
      }
      // A declared key whose value breaks its schema (patterns and propertyNames included).
      std::vector<RegexId> declared_bodies;
      for (const PropertyNode& p : o.properties) {
        const std::string d = canonical_dump(Json(p.name));
        declared_bodies.push_back(rx().literal(std::string_view(d).substr(1, d.size() - 2)));
        SYN_ASSIGN_OR_RETURN(NodePtr schema, schema_for_key(o, p.name));
        if (schema == any_) continue;
        SYN_ASSIGN_OR_RETURN(NodePtr bad, negate(schema, pointer));
        object_with([&](ObjectNode& x) {
          x.properties.push_back({p.name, bad});
          x.required.push_back(p.name);
        });
      }
      // An undeclared key whose value breaks the pattern it matches, or additionalProperties
      // when it matches none.
      const RegexId one_char = any_char();
      const RegexId quote = rx().literal("\"");
      const auto quoted = [&](std::vector<RegexId> body) {
        body.push_back(rx().repeat(one_char, 0, kUnbounded));
        if (!declared_bodies.empty()) body.push_back(rx().complement(rx().alt(declared_bodies)));
        const RegexId parts_of[] = {quote, rx().intersect(body), quote};
        return rx().concat(parts_of);
      };
      std::vector<RegexId> no_pattern;
      for (const PatternPropertyNode& p : o.pattern_properties) {
        no_pattern.push_back(rx().complement(p.key_body));
        if (p.schema == any_) continue;
        SYN_ASSIGN_OR_RETURN(NodePtr bad, negate(p.schema, pointer));
        witness(quoted({p.key_body}), bad);
      }
      if (o.additional != any_) {
        SYN_ASSIGN_OR_RETURN(NodePtr bad, negate(o.additional, pointer));
        witness(quoted(no_pattern), bad);
      }
      // A key that breaks propertyNames.
      if (o.key_lexeme != kNoRegex) {
        witness(rx().intersect(key_lexeme_any(), rx().complement(o.key_lexeme)), any_);
      }
      if (o.min_properties > 0) {
        object_with([&](ObjectNode& x) { x.max_properties = o.min_properties - 1; });
      }
      if (o.max_properties != kUnbounded) {
        object_with([&](ObjectNode& x) { x.min_properties = o.max_properties + 1; });
      }
      return any_of(std::move(parts));
    }
    default:
      return unsupported(pointer, "`not` of this schema is not supported");
  }
}

}  // namespace synapse::constrain::json_schema_internal
