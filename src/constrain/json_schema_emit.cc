// SPDX-License-Identifier: Apache-2.0
// Schema nodes to grammar rules. Each JSON token is one lexeme: a whole string (quotes and
// all), a whole number, a literal, a key, a punctuation mark. Objects and arrays are rules.
//
// Objects in definition order: declared properties come in `properties` order, each optional
// one may be skipped, then additional properties; the state is (next declared property, how
// many written so far), which both places the commas and counts for min/maxProperties.
// Without a count bound the count is only "none yet" or "some", the classic O(n)
// construction. Objects in any order are one bag (grammar.h), which the parser runs natively.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "constrain/ecma_regex.h"
#include "constrain/json_schema_internal.h"

namespace synapse::constrain::json_schema_internal {
namespace {

// Arrays carry the set of `contains` schemas already matched, objects the set of witnesses
// found: 2^n states per position.
constexpr size_t kMaxContains = 3;
constexpr size_t kMaxWitnesses = 4;
// patternProperties split the space of additional keys into 2^n regions (which patterns a key
// matches); past this many patterns the split is refused as too complex.
constexpr size_t kMaxPatternProperties = 6;
// A bag's seen set is one 64-bit word; objects with more declared keys keep definition order.
constexpr size_t kMaxBagProperties = 64;

Status too_complex(const std::string& message) {
  return Status(ErrorCode::kSchemaTooComplex, message);
}

}  // namespace

Symbol SchemaCompiler::lexeme(RegexId r) {
  if (options_.flexible_whitespace) {
    if (!ws_) {
      ByteSet blank;
      for (char c : {' ', '\t', '\n', '\r'}) blank.add(static_cast<uint8_t>(c));
      ws_ = rx().repeat(rx().bytes(blank), 0, JsonSchemaOptions::kMaxFlexibleWhitespace);
    }
    r = rx().concat(*ws_, r);
  }
  return gb_.token(r);
}

NonterminalId SchemaCompiler::never() {
  // A nonterminal without rules: GrammarBuilder::build drops every rule that uses it.
  if (!never_) never_ = gb_.add_nonterminal("never");
  return *never_;
}

RegexId SchemaCompiler::string_lexeme(const StringNode& s) {
  const RegexId one_char = any_char();
  // Pattern and format regexes already match only encoded characters; the repeat adds the
  // length bounds, or stands alone when nothing else constrains the body.
  std::vector<RegexId> body = s.body_regexes;
  if (body.empty() || s.min_length > 0 || s.max_length != kUnbounded) {
    body.push_back(rx().repeat(one_char, s.min_length, s.max_length));
  }
  const RegexId quote = rx().literal("\"");
  const RegexId parts[] = {quote, rx().intersect(body), quote};
  return rx().concat(parts);
}

RegexId SchemaCompiler::key_lexeme_any() { return string_lexeme(StringNode{}); }

Symbol SchemaCompiler::any_value() {
  if (any_value_) return *any_value_;
  const NonterminalId value = gb_.add_nonterminal("json value");
  const NonterminalId object = gb_.add_nonterminal("json object");
  const NonterminalId members = gb_.add_nonterminal("json members");
  const NonterminalId array = gb_.add_nonterminal("json array");
  const NonterminalId elements = gb_.add_nonterminal("json elements");
  any_value_ = Symbol::nonterminal(value);
  any_object_ = Symbol::nonterminal(object);
  const Symbol v = Symbol::nonterminal(value);
  const Symbol string = lexeme(key_lexeme_any());
  NumberRange unbounded;
  gb_.add_rule(value, {Symbol::nonterminal(object)});
  gb_.add_rule(value, {Symbol::nonterminal(array)});
  gb_.add_rule(value, {string});
  gb_.add_rule(value, {lexeme(number_range_regex(rx(), unbounded))});
  gb_.add_rule(value, {punct("true")});
  gb_.add_rule(value, {punct("false")});
  gb_.add_rule(value, {punct("null")});
  gb_.add_rule(object, {punct("{"), punct("}")});
  gb_.add_rule(object,
               {punct("{"), string, punct(":"), v, Symbol::nonterminal(members), punct("}")});
  gb_.add_rule(members, {});
  gb_.add_rule(members, {punct(","), string, punct(":"), v, Symbol::nonterminal(members)});
  gb_.add_rule(array, {punct("["), punct("]")});
  gb_.add_rule(array, {punct("["), v, Symbol::nonterminal(elements), punct("]")});
  gb_.add_rule(elements, {});
  gb_.add_rule(elements, {punct(","), v, Symbol::nonterminal(elements)});
  return *any_value_;
}

Symbol SchemaCompiler::any_object() {
  any_value();
  return *any_object_;
}

Result<Symbol> SchemaCompiler::emit(const NodePtr& n) {
  const Nesting nesting(*this);
  SYN_RETURN_IF_ERROR(check_budget(""));
  if (auto it = emitted_.find(n.get()); it != emitted_.end()) return it->second;
  Symbol result = Symbol::nonterminal(0);
  switch (n->kind) {
    case NodeKind::kAny:
      result = any_value();
      break;
    case NodeKind::kNothing:
      result = Symbol::nonterminal(never());
      break;
    case NodeKind::kNull:
      result = punct("null");
      break;
    case NodeKind::kBoolean:
      result = lexeme(rx().alt(rx().literal("true"), rx().literal("false")));
      break;
    case NodeKind::kNumber:
      result = lexeme(number_range_regex(rx(), n->number));
      break;
    case NodeKind::kString:
      result = lexeme(string_lexeme(n->string));
      break;
    case NodeKind::kConst: {
      // Scalars share one lexeme; arrays and objects are token sequences (one lexeme for a
      // whole `{"a":1}` would compete, greedily, with the `{` of other alternatives).
      std::vector<RegexId> scalars;
      std::vector<Symbol> structured;
      for (const Json& v : n->values) {
        if (v.is_array() || v.is_object()) {
          SYN_ASSIGN_OR_RETURN(Symbol s, emit_value(v));
          structured.push_back(s);
        } else if (v.is_number()) {
          scalars.push_back(number_equal_regex(rx(), decimal_of(v)));
        } else {
          scalars.push_back(rx().literal(canonical_dump(v)));
        }
      }
      if (structured.empty()) {
        result = lexeme(rx().alt(scalars));
        break;
      }
      const NonterminalId nt = gb_.add_nonterminal("enum");
      if (!scalars.empty()) gb_.add_rule(nt, {lexeme(rx().alt(scalars))});
      for (const Symbol s : structured) gb_.add_rule(nt, {s});
      result = Symbol::nonterminal(nt);
      break;
    }
    case NodeKind::kAnyOf: {
      const NonterminalId nt = gb_.add_nonterminal("anyOf");
      for (const NodePtr& option : n->options) {
        SYN_ASSIGN_OR_RETURN(Symbol s, emit(option));
        gb_.add_rule(nt, {s});
      }
      result = Symbol::nonterminal(nt);
      break;
    }
    case NodeKind::kRef: {
      SYN_ASSIGN_OR_RETURN(result, emit_ref(*n));
      break;
    }
    case NodeKind::kArray: {
      SYN_ASSIGN_OR_RETURN(result, emit_array(n->array));
      break;
    }
    case NodeKind::kObject: {
      SYN_ASSIGN_OR_RETURN(result, emit_object(n->object));
      break;
    }
  }
  emitted_.emplace(n.get(), result);
  keep_alive_.push_back(n);
  return result;
}

Result<Symbol> SchemaCompiler::emit_value(const Json& v) {
  const Nesting nesting(*this);
  SYN_RETURN_IF_ERROR(check_budget(""));
  if (v.is_number()) return lexeme(number_equal_regex(rx(), decimal_of(v)));
  if (!v.is_array() && !v.is_object()) return lexeme(rx().literal(canonical_dump(v)));
  std::vector<Symbol> rhs;
  if (v.is_array()) {
    rhs.push_back(punct("["));
    for (size_t i = 0; i < v.size(); ++i) {
      if (i > 0) rhs.push_back(punct(","));
      SYN_ASSIGN_OR_RETURN(Symbol s, emit_value(v[i]));
      rhs.push_back(s);
    }
    rhs.push_back(punct("]"));
  } else {
    rhs.push_back(punct("{"));
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!first) rhs.push_back(punct(","));
      first = false;
      rhs.push_back(lexeme(rx().literal(canonical_dump(Json(it.key())))));
      rhs.push_back(punct(":"));
      SYN_ASSIGN_OR_RETURN(Symbol s, emit_value(it.value()));
      rhs.push_back(s);
    }
    rhs.push_back(punct("}"));
  }
  if (rhs.size() >= (1u << 16)) return too_complex("a const or enum value has too many tokens");
  const NonterminalId nt = gb_.add_nonterminal("value");
  gb_.add_rule(nt, std::move(rhs));
  return Symbol::nonterminal(nt);
}

Result<Symbol> SchemaCompiler::emit_ref(const Node& n) {
  if (auto it = ref_nonterminals_.find(n.ref); it != ref_nonterminals_.end()) {
    return Symbol::nonterminal(it->second);
  }
  // The nonterminal exists before its body is emitted, so a recursive reference inside the
  // body finds it and the recursion ends.
  std::string name = "$ref ";
  for (const std::string& l : ref_literals(n)) name += (l.empty() ? "#" : l) + " ";
  const NonterminalId nt = gb_.add_nonterminal(std::move(name));
  ref_nonterminals_.emplace(n.ref, nt);
  SYN_ASSIGN_OR_RETURN(NodePtr target, deref(n));
  SYN_ASSIGN_OR_RETURN(Symbol body, emit(target));
  gb_.add_rule(nt, {body});
  return Symbol::nonterminal(nt);
}

Result<Symbol> SchemaCompiler::emit_array(const ArrayNode& a) {
  const size_t prefix = a.prefix_items.size();
  const bool bounded = a.max_items != kUnbounded;
  // Positions 0..last are distinct nonterminals; past `last` an unbounded tail repeats.
  const size_t last = bounded ? a.max_items : std::max<size_t>(prefix, a.min_items);
  // `contains` schemas not yet matched by an element are a bit set carried along.
  const size_t k = a.contains.size();
  if (k > kMaxContains) {
    return too_complex("more than " + std::to_string(kMaxContains) + " contains in one array");
  }
  const uint32_t full = (1u << k) - 1;
  if ((last + 1) << k > options_.max_rules) {
    return too_complex("array bounds need more than " + std::to_string(options_.max_rules) +
                       " rules");
  }
  // The element at position j that also matches the contains schemas in `also`.
  std::map<std::pair<size_t, uint32_t>, Symbol> elements;
  const auto element = [&](size_t j, uint32_t also) -> Result<Symbol> {
    const size_t at = std::min(j, prefix);
    if (auto it = elements.find({at, also}); it != elements.end()) return it->second;
    NodePtr node = at < prefix ? a.prefix_items[at] : a.items;
    for (size_t t = 0; t < k; ++t) {
      if (((also >> t) & 1) == 0) continue;
      SYN_ASSIGN_OR_RETURN(node, intersect(node, a.contains[t]));
    }
    SYN_ASSIGN_OR_RETURN(Symbol sym, emit(node));
    elements.emplace(std::pair{at, also}, sym);
    return sym;
  };
  // Each element may match any of the still unmatched contains schemas at once.
  const auto add_steps = [&](NonterminalId lhs, size_t j, uint32_t mask, bool comma,
                             const std::function<Symbol(uint32_t)>& next) -> Status {
    const uint32_t open = full & ~mask;
    for (uint32_t also = open;; also = (also - 1) & open) {
      SYN_ASSIGN_OR_RETURN(Symbol e, element(j, also));
      std::vector<Symbol> rhs;
      if (comma) rhs.push_back(punct(","));
      rhs.push_back(e);
      rhs.push_back(next(mask | also));
      gb_.add_rule(lhs, std::move(rhs));
      if (also == 0) break;
    }
    return ok_status();
  };
  // after[mask]: the rest of the array once j elements are written, for the current j.
  std::vector<NonterminalId> after(full + 1);
  for (uint32_t mask = 0; mask <= full; ++mask) after[mask] = gb_.add_nonterminal("array items");
  if (bounded) {
    gb_.add_rule(after[full], {});
  } else {
    std::vector<NonterminalId> tail(full + 1);
    for (uint32_t mask = 0; mask <= full; ++mask) tail[mask] = gb_.add_nonterminal("array tail");
    const auto to_tail = [&](uint32_t m) { return Symbol::nonterminal(tail[m]); };
    for (uint32_t mask = 0; mask <= full; ++mask) {
      if (mask == full) gb_.add_rule(tail[mask], {});
      SYN_RETURN_IF_ERROR(add_steps(tail[mask], last, mask, true, to_tail));
      if (mask == full) gb_.add_rule(after[mask], {});
      SYN_RETURN_IF_ERROR(add_steps(after[mask], last, mask, last > 0, to_tail));
    }
  }
  for (size_t j = last; j-- > 0;) {
    SYN_RETURN_IF_ERROR(check_budget(""));
    std::vector<NonterminalId> here(full + 1);
    for (uint32_t mask = 0; mask <= full; ++mask) {
      here[mask] = gb_.add_nonterminal("array items");
      if (j >= a.min_items && mask == full) gb_.add_rule(here[mask], {});
      SYN_RETURN_IF_ERROR(add_steps(here[mask], j, mask, j > 0,
                                    [&](uint32_t m) { return Symbol::nonterminal(after[m]); }));
    }
    after = std::move(here);
  }
  const NonterminalId array = gb_.add_nonterminal("array");
  gb_.add_rule(array, {punct("["), Symbol::nonterminal(after[0]), punct("]")});
  return Symbol::nonterminal(array);
}

Result<Symbol> SchemaCompiler::emit_object(const ObjectNode& o) {
  // Required keys that no `properties` entry declares may come in any order among the
  // additional ones: each is a witness (a key that must appear, with its schema) as long as
  // witnesses are few; past that they are declared after the others, in `required` order.
  std::vector<std::string> names;
  for (const PropertyNode& p : o.properties) names.push_back(p.name);
  std::vector<WitnessNode> witnesses = o.witnesses;
  std::vector<std::string> undeclared_required;
  for (const std::string& r : o.required) {
    if (std::find(names.begin(), names.end(), r) == names.end()) undeclared_required.push_back(r);
  }
  // In any order the object is a bag (see Bag): the parser tracks which declared keys came.
  // Witnesses (keys found by pattern, from negated constraints) need the ordered states.
  const bool unordered = options_.property_order == JsonSchemaOptions::PropertyOrder::kAny &&
                         witnesses.empty() &&
                         names.size() + undeclared_required.size() <= kMaxBagProperties;
  if (unordered) {
    names.insert(names.end(), undeclared_required.begin(), undeclared_required.end());
  } else if (witnesses.size() + undeclared_required.size() <= kMaxWitnesses) {
    for (const std::string& r : undeclared_required) {
      SYN_ASSIGN_OR_RETURN(NodePtr schema, schema_for_key(o, r));
      if (schema->kind == NodeKind::kNothing) return Symbol::nonterminal(never());
      witnesses.push_back({rx().literal(canonical_dump(Json(r))), schema});
    }
  } else {
    names.insert(names.end(), undeclared_required.begin(), undeclared_required.end());
  }
  const size_t k = witnesses.size();
  if (k > kMaxWitnesses) {
    return too_complex("more than " + std::to_string(kMaxWitnesses) +
                       " required witnesses (negated property constraints) in one object");
  }
  const uint32_t full = (1u << k) - 1;
  const RegexId one_char = any_char();
  const RegexId quote = rx().literal("\"");
  const auto quoted = [&](RegexId body) {
    const RegexId parts[] = {quote, body, quote};
    return rx().concat(parts);
  };
  // A value that is also the witness of every set bit of `also`.
  const auto with_witnesses = [&](NodePtr value, uint32_t also) -> Result<NodePtr> {
    for (size_t t = 0; t < k; ++t) {
      if (((also >> t) & 1) == 0) continue;
      SYN_ASSIGN_OR_RETURN(value, intersect(value, witnesses[t].value));
    }
    return value;
  };

  // Declared entries, in order; `takes[also]` is the "key : value" pair that also serves as
  // the witnesses in `also` (a subset of those whose key pattern matches this key).
  struct Entry {
    std::map<uint32_t, std::vector<Symbol>> takes;
    uint32_t can_witness = 0;
    bool required = false;
  };
  std::vector<Entry> entries;
  std::vector<RegexId> declared_keys;
  for (const std::string& name : names) {
    const std::string literal = canonical_dump(Json(name));
    const RegexId key = rx().literal(literal);
    declared_keys.push_back(key);
    SYN_ASSIGN_OR_RETURN(NodePtr schema, schema_for_key(o, name));
    const bool required = std::find(o.required.begin(), o.required.end(), name) != o.required.end();
    if (schema->kind == NodeKind::kNothing) {
      if (required) return Symbol::nonterminal(never());
      continue;  // forbidden: neither declared nor additional
    }
    Entry e;
    e.required = required;
    for (size_t t = 0; t < k; ++t) {
      RegexId r = witnesses[t].key_lexeme;
      for (const char c : literal) r = rx().derive(r, static_cast<uint8_t>(c));
      if (rx().nullable(r)) e.can_witness |= 1u << t;
    }
    const Symbol key_symbol = lexeme(key);
    for (uint32_t also = e.can_witness;; also = (also - 1) & e.can_witness) {
      SYN_ASSIGN_OR_RETURN(NodePtr value, with_witnesses(schema, also));
      SYN_ASSIGN_OR_RETURN(Symbol v, emit(value));
      e.takes[also] = {key_symbol, punct(":"), v};
      if (also == 0) break;
    }
    entries.push_back(std::move(e));
  }

  // Additional keys: the regions of key space cut by the patterns, each with its schema.
  struct Region {
    RegexId body;
    NodePtr value;
  };
  std::vector<Region> regions;
  const size_t patterns = o.pattern_properties.size();
  if (patterns > kMaxPatternProperties) {
    return too_complex("more than " + std::to_string(kMaxPatternProperties) +
                       " patternProperties in one object");
  }
  RegexId base_key = key_lexeme_any();
  if (o.key_lexeme != kNoRegex) base_key = rx().intersect(base_key, o.key_lexeme);
  if (!declared_keys.empty()) {
    base_key = rx().intersect(base_key, rx().complement(rx().alt(declared_keys)));
  }
  for (size_t mask = 0; mask < (size_t{1} << patterns); ++mask) {
    NodePtr schema = mask == 0 ? o.additional : any_;
    std::vector<RegexId> body = {rx().repeat(one_char, 0, kUnbounded)};
    for (size_t j = 0; j < patterns; ++j) {
      const PatternPropertyNode& p = o.pattern_properties[j];
      if ((mask >> j) & 1) {
        body.push_back(p.key_body);
        SYN_ASSIGN_OR_RETURN(schema, intersect(schema, p.schema));
      } else {
        body.push_back(rx().complement(p.key_body));
      }
    }
    if (schema->kind == NodeKind::kNothing) continue;
    regions.push_back({rx().intersect(body), schema});
  }
  // One nonterminal per set of witnesses an additional entry also serves.
  std::map<uint32_t, Symbol> additional_entry;
  for (uint32_t also = 0; also <= full; ++also) {
    std::optional<NonterminalId> nt;
    for (const Region& r : regions) {
      RegexId key = patterns > 0 ? rx().intersect(base_key, quoted(r.body)) : base_key;
      for (size_t t = 0; t < k; ++t) {
        if ((also >> t) & 1) key = rx().intersect(key, witnesses[t].key_lexeme);
      }
      // Without patterns, witnesses or propertyNames the key space is infinite, never empty.
      if ((patterns > 0 || also != 0 || o.key_lexeme != kNoRegex) && rx().is_empty_language(key)) {
        continue;
      }
      SYN_ASSIGN_OR_RETURN(NodePtr value, with_witnesses(r.value, also));
      if (value->kind == NodeKind::kNothing) continue;
      SYN_ASSIGN_OR_RETURN(Symbol v, emit(value));
      if (!nt) nt = gb_.add_nonterminal("additional property");
      gb_.add_rule(*nt, {lexeme(key), punct(":"), v});
    }
    if (nt) additional_entry.emplace(also, Symbol::nonterminal(*nt));
  }

  const size_t n = entries.size();
  if (unordered) {
    // Each declared entry is a member at most once, the additional entry repeats.
    Bag bag;
    bag.separator = punct(",").id();
    for (size_t i = 0; i < n; ++i) {
      const NonterminalId member = gb_.add_nonterminal("property");
      gb_.add_rule(member, entries[i].takes.at(0));
      bag.members.push_back({member, static_cast<int32_t>(i)});
      if (entries[i].required) bag.required |= uint64_t{1} << i;
    }
    if (const auto it = additional_entry.find(0); it != additional_entry.end()) {
      bag.members.push_back({it->second.id(), -1});
    }
    bag.min_count = o.min_properties;
    bag.max_count = o.max_properties == kUnbounded ? Bag::kUnbounded : o.max_properties;
    const NonterminalId properties = gb_.add_nonterminal("object properties");
    gb_.add_bag(properties, std::move(bag));
    const NonterminalId object = gb_.add_nonterminal("object");
    gb_.add_rule(object, {punct("{"), Symbol::nonterminal(properties), punct("}")});
    return Symbol::nonterminal(object);
  }
  const bool bounded = o.max_properties != kUnbounded;
  const size_t top = bounded ? o.max_properties : std::max<size_t>(1, o.min_properties);
  if (((n + 1) * (top + 1)) << k > options_.max_rules) {
    return too_complex("object bounds need more than " + std::to_string(options_.max_rules) +
                       " rules");
  }
  // state(i, c, m): declared entries i.. remain, c properties are written (saturating at top
  // when there is no maximum) and the witnesses in m are found.
  std::map<std::tuple<size_t, size_t, uint32_t>, NonterminalId> states;
  std::vector<std::tuple<size_t, size_t, uint32_t>> pending;
  const auto state = [&](size_t i, size_t c, uint32_t m) {
    auto [it, inserted] = states.try_emplace({i, c, m}, 0);
    if (inserted) {
      it->second = gb_.add_nonterminal(i == n ? "object rest" : "object properties");
      pending.emplace_back(i, c, m);
    }
    return Symbol::nonterminal(it->second);
  };
  const auto can_add = [&](size_t c) { return !bounded || c + 1 <= top; };
  const auto after_add = [&](size_t c) { return bounded ? c + 1 : std::min(c + 1, top); };
  const Symbol start = state(0, 0, 0);
  while (!pending.empty()) {
    SYN_RETURN_IF_ERROR(check_budget(""));
    const auto [i, c, m] = pending.back();
    pending.pop_back();
    const NonterminalId lhs = states.at({i, c, m});
    if (i < n) {
      const Entry& e = entries[i];
      if (can_add(c)) {
        for (const auto& [also, pair] : e.takes) {
          if ((also & m) != 0) continue;
          std::vector<Symbol> rhs;
          if (c > 0) rhs.push_back(punct(","));
          rhs.insert(rhs.end(), pair.begin(), pair.end());
          rhs.push_back(state(i + 1, after_add(c), m | also));
          gb_.add_rule(lhs, std::move(rhs));
        }
      }
      if (!e.required) gb_.add_rule(lhs, {state(i + 1, c, m)});
    } else {
      if (c >= o.min_properties && m == full) gb_.add_rule(lhs, {});
      if (!can_add(c)) continue;
      for (const auto& [also, entry] : additional_entry) {
        if ((also & m) != 0) continue;
        std::vector<Symbol> rhs;
        if (c > 0) rhs.push_back(punct(","));
        rhs.push_back(entry);
        rhs.push_back(state(n, after_add(c), m | also));
        gb_.add_rule(lhs, std::move(rhs));
      }
    }
  }
  const NonterminalId object = gb_.add_nonterminal("object");
  gb_.add_rule(object, {punct("{"), start, punct("}")});
  return Symbol::nonterminal(object);
}

}  // namespace synapse::constrain::json_schema_internal
