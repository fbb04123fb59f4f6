// SPDX-License-Identifier: Apache-2.0
// Hash-consed regex terms. Design goals: equal terms get equal ids (smart constructors bring
// terms to a normal form before interning, so the derivatives of a term like `.*abc.*` close
// over a handful of states), and a memoized derivative costs one table read. Non-goals:
// deciding language equality in general (normal forms are cheap, not complete).
// One file of ~870 lines on purpose: everything here is RegexBuilder::Impl, whose term table,
// interning and memo tables the constructors, derivatives and analyses (byte classes,
// emptiness, widening) all share; splitting it would put Impl in a header for no reader's gain.
#include "constrain/regex.h"

#include <algorithm>
#include <array>
#include <bit>
#include <deque>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace synapse::constrain {

ByteSet ByteSet::complement() const {
  ByteSet out;
  for (size_t i = 0; i < words_.size(); ++i) out.words_[i] = ~words_[i];
  return out;
}

namespace {

enum class Kind : uint8_t { kNothing, kEpsilon, kBytes, kConcat, kOr, kAnd, kNot, kRepeat };

// Fixed ids, interned by the constructor in this order.
constexpr RegexId kNothingId = 0;
constexpr RegexId kEpsilonId = 1;
constexpr RegexId kAnyByteId = 2;
constexpr RegexId kAnyBytesId = 3;

constexpr uint32_t kNoMemoSlot = UINT32_MAX;
constexpr RegexId kEmptySlot = UINT32_MAX;
constexpr RegexId kNotDerived = UINT32_MAX;

struct Term {
  Kind kind = Kind::kNothing;
  bool nullable = false;
  // Contains an And or a Not, so a term other than ∅ may still match nothing.
  bool has_boolean = false;
  int8_t empty = -1;  // is_empty_language's answer once known; -1 while unknown
  uint32_t a = 0;     // Concat head, Not and Repeat operand, ByteSet index
  uint32_t b = 0;     // Concat tail
  uint32_t min = 0;   // Repeat bounds
  uint32_t max = 0;
  uint32_t first = 0;  // Or and And operands: children[first, first + count)
  uint32_t count = 0;
};

ByteSet set_union(const ByteSet& x, const ByteSet& y) {
  ByteSet out = x;
  for (unsigned b = 0; b < 256; ++b) {
    if (y.contains(static_cast<uint8_t>(b))) out.add(static_cast<uint8_t>(b));
  }
  return out;
}

ByteSet set_intersection(const ByteSet& x, const ByteSet& y) {
  ByteSet out;
  for (unsigned b = 0; b < 256; ++b) {
    if (x.contains(static_cast<uint8_t>(b)) && y.contains(static_cast<uint8_t>(b))) {
      out.add(static_cast<uint8_t>(b));
    }
  }
  return out;
}

uint64_t hash_mix(uint64_t h, uint64_t v) {
  h = (h ^ v) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

int utf8_length(char32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// Writes the UTF-8 bytes of `cp` into out[0, n).
void utf8_encode(char32_t cp, int n, uint8_t* out) {
  static constexpr uint8_t kLead[5] = {0, 0x00, 0xC0, 0xE0, 0xF0};
  for (int i = n - 1; i > 0; --i) {
    out[i] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    cp >>= 6;
  }
  out[0] = static_cast<uint8_t>(kLead[n] | cp);
}

}  // namespace

struct RegexBuilder::Impl {
  std::vector<Term> terms;
  // byte_classes' memo: per term an index into class_arrays, or -1.
  std::vector<int32_t> class_of_term;
  std::deque<std::array<uint8_t, 256>> class_arrays;
  std::vector<int16_t> refine_scratch;
  std::unordered_map<uint64_t, RegexId> horizon_memo;  // horizon(), keyed by term << 16 | h
  std::vector<ByteSet> sets;
  std::vector<RegexId> children;
  // Interning: an open-addressing table of term ids, probed by each term's structural hash
  // and compared field by field, so looking a term up allocates nothing.
  std::vector<RegexId> table = std::vector<RegexId>(1024, kEmptySlot);
  std::vector<uint64_t> hashes;  // per term
  // Per term, a 128-bit hash of its structure that does not depend on this builder's ids (the
  // children of Or and And hashed in sorted order): equal terms of two builders hash equal, so
  // masks of lexer states can be shared between grammars.
  std::vector<std::array<uint64_t, 2>> structural;
  // Derivatives: term r's results live in memo[memo_slot[r] * 256 + byte], allocated the
  // first time r is derived, so a hit is two loads.
  std::vector<uint32_t> memo_slot;
  std::vector<RegexId> memo;
  // Single bytes, the bulk of every literal, skip the hash lookup.
  std::array<RegexId, 256> byte_ids{};  // kNothingId until first built

  Impl() {
    intern(Term{.kind = Kind::kNothing}, {});
    intern(Term{.kind = Kind::kEpsilon, .nullable = true}, {});
    bytes(ByteSet().complement());
    intern(Term{.kind = Kind::kRepeat, .nullable = true, .a = kAnyByteId, .max = kUnbounded}, {});
  }

  const Term& term(RegexId r) const { return terms[r]; }

  // The id of the term equal to `t` (with operands `kids`, or byte set `set` for a ByteSet),
  // adding it when new.
  RegexId intern(Term t, std::span<const RegexId> kids, const ByteSet* set = nullptr) {
    uint64_t h = static_cast<uint64_t>(t.kind) + 1;
    if (set != nullptr) {
      for (uint64_t w : set->words()) h = hash_mix(h, w);
    } else {
      h = hash_mix(hash_mix(h, (uint64_t{t.a} << 32) | t.b), (uint64_t{t.min} << 32) | t.max);
      for (RegexId k : kids) h = hash_mix(h, k);
    }
    const size_t mask = table.size() - 1;
    size_t i = h & mask;
    for (; table[i] != kEmptySlot; i = (i + 1) & mask) {
      const RegexId id = table[i];
      if (hashes[id] == h && same(terms[id], t, kids, set)) return id;
    }
    const auto id = static_cast<RegexId>(terms.size());
    if (set != nullptr) {
      t.a = static_cast<uint32_t>(sets.size());
      sets.push_back(*set);
    }
    t.first = static_cast<uint32_t>(children.size());
    t.count = static_cast<uint32_t>(kids.size());
    children.insert(children.end(), kids.begin(), kids.end());
    terms.push_back(t);
    hashes.push_back(h);
    structural.push_back(structural_hash(t, kids, set));
    memo_slot.push_back(kNoMemoSlot);
    table[i] = id;
    if (terms.size() * 2 > table.size()) grow_table();
    return id;
  }

  std::array<uint64_t, 2> structural_hash(const Term& t, std::span<const RegexId> kids,
                                          const ByteSet* set) const {
    std::array<uint64_t, 2> h = {0x243f6a8885a308d3ull ^ static_cast<uint64_t>(t.kind),
                                 0x13198a2e03707344ull + static_cast<uint64_t>(t.kind)};
    auto add = [&](uint64_t v) {
      h[0] = hash_mix(h[0], v);
      h[1] = hash_mix(h[1] ^ 0x9e3779b97f4a7c15ull, v + 0x7f4a7c159e3779b9ull);
    };
    if (set != nullptr) {
      for (uint64_t w : set->words()) add(w);
      return h;
    }
    add((uint64_t{t.min} << 32) | t.max);
    switch (t.kind) {
      case Kind::kConcat:
        add(structural[t.a][0]);
        add(structural[t.a][1]);
        add(structural[t.b][0]);
        add(structural[t.b][1]);
        break;
      case Kind::kNot:
      case Kind::kRepeat:
        add(structural[t.a][0]);
        add(structural[t.a][1]);
        break;
      case Kind::kOr:
      case Kind::kAnd: {
        std::vector<std::array<uint64_t, 2>> parts;
        for (RegexId k : kids) parts.push_back(structural[k]);
        std::sort(parts.begin(), parts.end());
        for (const auto& p : parts) {
          add(p[0]);
          add(p[1]);
        }
        break;
      }
      default:
        break;
    }
    return h;
  }

  bool same(const Term& u, const Term& t, std::span<const RegexId> kids, const ByteSet* set) const {
    if (u.kind != t.kind) return false;
    if (set != nullptr) return sets[u.a] == *set;
    return u.a == t.a && u.b == t.b && u.min == t.min && u.max == t.max && u.count == kids.size() &&
           std::equal(kids.begin(), kids.end(), children.begin() + u.first);
  }

  void grow_table() {
    table.assign(table.size() * 2, kEmptySlot);
    const size_t mask = table.size() - 1;
    for (RegexId id = 0; id < terms.size(); ++id) {
      size_t i = hashes[id] & mask;
      while (table[i] != kEmptySlot) i = (i + 1) & mask;
      table[i] = id;
    }
  }

  std::span<const RegexId> kids(const Term& t) const {
    return std::span<const RegexId>(children).subspan(t.first, t.count);
  }

  RegexId bytes(const ByteSet& s) {
    if (s.empty()) return kNothingId;
    return intern(Term{.kind = Kind::kBytes}, {}, &s);
  }

  RegexId concat(RegexId a, RegexId b) {
    if (terms[a].kind != Kind::kConcat) return concat_head(a, b);
    // Right-nested normal form: (xy)z and x(yz) are one term. A loop, not recursion: a
    // chain may be as long as a literal in the pattern.
    std::vector<RegexId> heads;
    for (; terms[a].kind == Kind::kConcat; a = terms[a].b) heads.push_back(terms[a].a);
    RegexId r = concat_head(a, b);
    for (size_t i = heads.size(); i-- > 0;) r = concat_head(heads[i], r);
    return r;
  }

  // concat() where `a` is not itself a concatenation.
  RegexId concat_head(RegexId a, RegexId b) {
    if (a == kNothingId || b == kNothingId) return kNothingId;
    if (a == kEpsilonId) return b;
    if (b == kEpsilonId) return a;
    if (a == kAnyBytesId && b == kAnyBytesId) return a;
    Term t{.kind = Kind::kConcat,
           .nullable = terms[a].nullable && terms[b].nullable,
           .has_boolean = terms[a].has_boolean || terms[b].has_boolean,
           .a = a,
           .b = b};
    return intern(t, {});
  }

  RegexId alt(std::span<const RegexId> parts) {
    std::vector<RegexId> flat;
    ByteSet merged;
    bool has_set = false;
    auto take = [&](RegexId p) {
      if (p == kNothingId) return;
      if (terms[p].kind == Kind::kBytes) {
        merged = has_set ? set_union(merged, sets[terms[p].a]) : sets[terms[p].a];
        has_set = true;
      } else {
        flat.push_back(p);
      }
    };
    for (RegexId p : parts) {
      if (p == kAnyBytesId) return kAnyBytesId;
      if (terms[p].kind == Kind::kOr) {
        for (RegexId k : kids(terms[p])) take(k);
      } else {
        take(p);
      }
    }
    if (has_set) flat.push_back(bytes(merged));
    std::sort(flat.begin(), flat.end());
    flat.erase(std::unique(flat.begin(), flat.end()), flat.end());
    // ε adds nothing beside another nullable operand.
    const bool other_nullable = std::any_of(
        flat.begin(), flat.end(), [&](RegexId p) { return p != kEpsilonId && terms[p].nullable; });
    if (other_nullable) std::erase(flat, kEpsilonId);
    if (flat.empty()) return kNothingId;
    if (flat.size() == 1) return flat[0];
    Term t{.kind = Kind::kOr};
    for (RegexId p : flat) {
      t.nullable |= terms[p].nullable;
      t.has_boolean |= terms[p].has_boolean;
    }
    return intern(t, flat);
  }

  RegexId intersect(std::span<const RegexId> parts) {
    std::vector<RegexId> flat;
    ByteSet common;
    bool has_set = false;
    bool has_epsilon = false;
    bool all_nullable = true;
    auto take = [&](RegexId p) {
      all_nullable &= terms[p].nullable;
      if (p == kAnyBytesId) return;
      if (p == kEpsilonId) {
        has_epsilon = true;
      } else if (terms[p].kind == Kind::kBytes) {
        common = has_set ? set_intersection(common, sets[terms[p].a]) : sets[terms[p].a];
        has_set = true;
      } else {
        flat.push_back(p);
      }
    };
    for (RegexId p : parts) {
      if (p == kNothingId) return kNothingId;
      if (terms[p].kind == Kind::kAnd) {
        for (RegexId k : kids(terms[p])) take(k);
      } else {
        take(p);
      }
    }
    // ε's language has one string, so the intersection is ε or ∅.
    if (has_epsilon) return all_nullable ? kEpsilonId : kNothingId;
    if (has_set) {
      if (common.empty()) return kNothingId;
      flat.push_back(bytes(common));
    }
    std::sort(flat.begin(), flat.end());
    flat.erase(std::unique(flat.begin(), flat.end()), flat.end());
    if (flat.empty()) return kAnyBytesId;
    if (flat.size() == 1) return flat[0];
    Term t{.kind = Kind::kAnd, .nullable = true, .has_boolean = true};
    for (RegexId p : flat) t.nullable &= terms[p].nullable;
    return intern(t, flat);
  }

  RegexId complement(RegexId r) {
    if (r == kNothingId) return kAnyBytesId;
    if (r == kAnyBytesId) return kNothingId;
    if (terms[r].kind == Kind::kNot) return terms[r].a;
    Term t{.kind = Kind::kNot, .nullable = !terms[r].nullable, .has_boolean = true, .a = r};
    return intern(t, {});
  }

  RegexId repeat(RegexId r, uint32_t min, uint32_t max) {
    if (min > max) return kNothingId;
    if (max == 0 || r == kEpsilonId) return kEpsilonId;
    if (r == kNothingId) return min == 0 ? kEpsilonId : kNothingId;
    if (min == 1 && max == 1) return r;
    // With ε in r, r{m,n} = r{0,n}; one spelling keeps derivatives interned together.
    if (terms[r].nullable) min = 0;
    // (x*){0,n} = x* for n ≥ 1.
    if (min == 0 && terms[r].kind == Kind::kRepeat && terms[r].min == 0 &&
        terms[r].max == kUnbounded) {
      return r;
    }
    Term t{.kind = Kind::kRepeat,
           .nullable = min == 0,
           .has_boolean = terms[r].has_boolean,
           .a = r,
           .min = min,
           .max = max};
    return intern(t, {});
  }

  RegexId memo_lookup(RegexId r, uint8_t byte) const {
    const uint32_t slot = memo_slot[r];
    return slot == kNoMemoSlot ? kNotDerived : memo[size_t{slot} * 256 + byte];
  }

  RegexId derive(RegexId r, uint8_t byte) {
    const RegexId hit = memo_lookup(r, byte);
    if (hit != kNotDerived) return hit;
    const Term t = terms[r];  // a copy: deriving interns new terms
    RegexId result = kNothingId;
    switch (t.kind) {
      case Kind::kNothing:
      case Kind::kEpsilon:
        return kNothingId;
      case Kind::kBytes:
        return sets[t.a].contains(byte) ? kEpsilonId : kNothingId;
      case Kind::kConcat: {
        // A byte then the rest, as in every literal: cheaper to recompute than to give a
        // table of 256 results to each position of a long literal.
        if (terms[t.a].kind == Kind::kBytes) {
          return sets[terms[t.a].a].contains(byte) ? t.b : kNothingId;
        }
        // d(xy) = d(x)y | d(y) when x is nullable. The chain of nullable heads is walked in a
        // loop, not by recursion, so its length does not reach the stack.
        std::vector<RegexId> parts;
        for (RegexId rest = r;;) {
          if (rest != r) {
            const RegexId known = memo_lookup(rest, byte);
            if (known != kNotDerived || terms[rest].kind != Kind::kConcat) {
              parts.push_back(known != kNotDerived ? known : derive(rest, byte));
              break;
            }
          }
          const Term c = terms[rest];
          parts.push_back(concat(derive(c.a, byte), c.b));
          if (!terms[c.a].nullable) break;
          rest = c.b;
        }
        result = alt(parts);
        break;
      }
      case Kind::kOr:
      case Kind::kAnd: {
        std::vector<RegexId> parts;
        parts.reserve(t.count);
        for (uint32_t i = 0; i < t.count; ++i) parts.push_back(derive(children[t.first + i], byte));
        result = t.kind == Kind::kOr ? alt(parts) : intersect(parts);
        break;
      }
      case Kind::kNot:
        result = complement(derive(t.a, byte));
        break;
      case Kind::kRepeat: {
        const uint32_t min = t.min == 0 ? 0 : t.min - 1;
        const uint32_t max = t.max == kUnbounded ? kUnbounded : t.max - 1;
        result = concat(derive(t.a, byte), repeat(t.a, min, max));
        break;
      }
    }
    uint32_t slot = memo_slot[r];
    if (slot == kNoMemoSlot) {
      slot = static_cast<uint32_t>(memo.size() / 256);
      memo_slot[r] = slot;
      memo.resize(memo.size() + 256, kNotDerived);
    }
    memo[size_t{slot} * 256 + byte] = result;
    return result;
  }

  RegexId alt2(RegexId a, RegexId b) {
    const RegexId parts[2] = {a, b};
    return alt(parts);
  }

  // r with every counted repeat that no text of at most h bytes can tell from an unbounded one
  // made unbounded (max >= h), and every lower bound no such text can reach made h + 1: the
  // same decisions (alive, accepting) on every text of at most h bytes, so lexer states that
  // differ only in a long string's remaining count share their masks. Terms with intersection
  // or complement are left as they are (their emptiness is not syntactic).
  RegexId horizon(RegexId r, uint32_t h, int depth = 0) {
    const Term t = terms[r];
    if (t.has_boolean || t.kind == Kind::kNothing || t.kind == Kind::kEpsilon ||
        t.kind == Kind::kBytes || depth > 400) {
      return r;
    }
    const uint64_t key = (uint64_t{r} << 16) | h;
    if (const auto found = horizon_memo.find(key); found != horizon_memo.end()) {
      return found->second;
    }
    RegexId out = r;
    switch (t.kind) {
      case Kind::kConcat:
        out = concat(horizon(t.a, h, depth + 1), horizon(t.b, h, depth + 1));
        break;
      case Kind::kOr: {
        std::vector<RegexId> parts;
        for (RegexId k : kids(t)) parts.push_back(horizon(k, h, depth + 1));
        out = alt(parts);
        break;
      }
      case Kind::kRepeat:
        out = repeat(horizon(t.a, h, depth + 1), t.min > h ? h + 1 : t.min,
                     t.max >= h ? kUnbounded : t.max);
        break;
      default:
        break;
    }
    horizon_memo.emplace(key, out);
    return out;
  }

  // The bytes split into classes that every ByteSet in r treats alike (bytes in one class have
  // the same derivative), memoized per term and built from the children's classes: a new
  // derivative costs one refinement per child instead of a walk of its whole term, which made
  // emptiness checks of large intersections and complements the cost of a mask.
  const std::array<uint8_t, 256>& byte_classes(RegexId r) {
    if (r < class_of_term.size() && class_of_term[r] >= 0)
      return class_arrays[static_cast<size_t>(class_of_term[r])];
    std::vector<std::pair<RegexId, bool>> stack{{r, false}};
    while (!stack.empty()) {
      const auto [id, expanded] = stack.back();
      stack.pop_back();
      if (id < class_of_term.size() && class_of_term[id] >= 0) continue;
      const Term t = terms[id];
      std::vector<RegexId> operands;
      switch (t.kind) {
        case Kind::kConcat:
          operands = {t.a, t.b};
          break;
        case Kind::kNot:
        case Kind::kRepeat:
          operands = {t.a};
          break;
        case Kind::kOr:
        case Kind::kAnd:
          for (RegexId k : kids(t)) operands.push_back(k);
          break;
        case Kind::kBytes:
        case Kind::kNothing:
        case Kind::kEpsilon:
          break;
      }
      if (!expanded) {
        stack.emplace_back(id, true);
        for (RegexId c : operands) {
          if (c >= class_of_term.size() || class_of_term[c] < 0) stack.emplace_back(c, false);
        }
        continue;
      }
      std::array<uint8_t, 256> classes{};
      if (t.kind == Kind::kBytes) {
        for (unsigned b = 0; b < 256; ++b) classes[b] = sets[t.a].contains(static_cast<uint8_t>(b));
      }
      for (RegexId c : operands)
        refine(classes, class_arrays[static_cast<size_t>(class_of_term[c])]);
      if (class_of_term.size() <= id) class_of_term.resize(terms.size(), -1);
      class_of_term[id] = static_cast<int32_t>(class_arrays.size());
      class_arrays.push_back(classes);
    }
    return class_arrays[static_cast<size_t>(class_of_term[r])];
  }

  // Splits the classes of `p` by those of `q`, renumbering from 0. The scratch table maps a
  // (p class, q class) pair to its new class; only the pairs used are reset afterwards.
  void refine(std::array<uint8_t, 256>& p, const std::array<uint8_t, 256>& q) {
    if (refine_scratch.empty()) refine_scratch.assign(size_t{256} * 256, -1);
    std::array<uint16_t, 256> used{};
    int16_t next = 0;
    for (unsigned b = 0; b < 256; ++b) {
      const uint16_t key = static_cast<uint16_t>(p[b] * 256u + q[b]);
      int16_t& slot = refine_scratch[key];
      if (slot < 0) {
        used[static_cast<size_t>(next)] = key;
        slot = next++;
      }
      p[b] = static_cast<uint8_t>(slot);
    }
    for (int16_t i = 0; i < next; ++i) refine_scratch[used[static_cast<size_t>(i)]] = -1;
  }

  // One byte from each class of bytes that every ByteSet in r treats alike.
  std::vector<uint8_t> byte_class_representatives(RegexId r) {
    const std::array<uint8_t, 256>& classes = byte_classes(r);
    std::vector<uint8_t> reps;
    std::array<bool, 256> taken{};
    for (unsigned b = 0; b < 256; ++b) {
      if (!taken[classes[b]]) {
        taken[classes[b]] = true;
        reps.push_back(static_cast<uint8_t>(b));
      }
    }
    return reps;
  }

  bool is_empty_language(RegexId r, size_t budget) {
    if (!terms[r].has_boolean) return r == kNothingId;
    if (terms[r].empty >= 0) return terms[r].empty == 1;
    std::vector<RegexId> queue{r};
    std::unordered_set<RegexId> seen{r};
    for (size_t i = 0; i < queue.size(); ++i) {
      const RegexId s = queue[i];
      const Term t = terms[s];  // a copy: deriving interns new terms
      if (s == kNothingId || t.empty == 1) continue;
      if (t.nullable || t.empty == 0 || !t.has_boolean) {
        terms[r].empty = 0;
        return false;
      }
      if (i >= budget) return false;
      for (uint8_t b : byte_class_representatives(s)) {
        const RegexId d = derive(s, b);
        if (seen.insert(d).second) queue.push_back(d);
      }
    }
    // Every state reachable from r was explored and none accepts.
    for (RegexId s : queue) terms[s].empty = 1;
    return true;
  }

  // Appends a readable rendering of a byte to `out`, escaped as in a regex.
  static void render_byte(uint8_t b, std::string& out) {
    static constexpr std::string_view kSpecial = "\\^$.|?*+()[]{}-&~";
    if (b >= 0x20 && b < 0x7F) {
      if (kSpecial.find(static_cast<char>(b)) != std::string_view::npos) out += '\\';
      out += static_cast<char>(b);
      return;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }

  void render_set(const ByteSet& s, std::string& out) const {
    int members = 0;
    for (uint64_t w : s.words()) members += std::popcount(w);
    if (members == 1) {
      for (unsigned b = 0; b < 256; ++b) {
        if (s.contains(static_cast<uint8_t>(b))) render_byte(static_cast<uint8_t>(b), out);
      }
      return;
    }
    out += '[';
    for (unsigned b = 0; b < 256;) {
      if (!s.contains(static_cast<uint8_t>(b))) {
        ++b;
        continue;
      }
      unsigned end = b;
      while (end + 1 < 256 && s.contains(static_cast<uint8_t>(end + 1))) ++end;
      render_byte(static_cast<uint8_t>(b), out);
      if (end > b) {
        if (end > b + 1) out += '-';
        render_byte(static_cast<uint8_t>(end), out);
      }
      b = end + 1;
    }
    out += ']';
  }

  // Precedence, loosest first: | then & then concatenation then ~ and postfix repeats.
  static int precedence(Kind kind) {
    switch (kind) {
      case Kind::kOr:
        return 0;
      case Kind::kAnd:
        return 1;
      case Kind::kConcat:
        return 2;
      case Kind::kNot:
      case Kind::kRepeat:
        return 3;
      default:
        return 4;
    }
  }

  void render(RegexId r, int context, std::string& out) const {
    const Term& t = terms[r];
    const bool paren = precedence(t.kind) < context;
    if (paren) out += '(';
    switch (t.kind) {
      case Kind::kNothing:
        out += "[]";
        break;
      case Kind::kEpsilon:
        out += "()";
        break;
      case Kind::kBytes:
        render_set(sets[t.a], out);
        break;
      case Kind::kConcat: {
        RegexId rest = r;
        for (; terms[rest].kind == Kind::kConcat; rest = terms[rest].b) {
          render(terms[rest].a, 3, out);
        }
        render(rest, 3, out);
        break;
      }
      case Kind::kOr:
      case Kind::kAnd:
        for (uint32_t i = 0; i < t.count; ++i) {
          if (i > 0) out += t.kind == Kind::kOr ? '|' : '&';
          render(children[t.first + i], precedence(t.kind) + 1, out);
        }
        break;
      case Kind::kNot:
        out += '~';
        render(t.a, 4, out);
        break;
      case Kind::kRepeat:
        render(t.a, 4, out);
        if (t.min == 0 && t.max == kUnbounded) {
          out += '*';
        } else if (t.min == 1 && t.max == kUnbounded) {
          out += '+';
        } else if (t.min == 0 && t.max == 1) {
          out += '?';
        } else if (t.min == t.max) {
          out += '{' + std::to_string(t.min) + '}';
        } else {
          out += '{' + std::to_string(t.min) + ',' +
                 (t.max == kUnbounded ? std::string() : std::to_string(t.max)) + '}';
        }
        break;
    }
    if (paren) out += ')';
  }

  // Code points in [lo, hi], which all encode to the same number of bytes, as byte ranges.
  // The split (as in RE2 and Rust's utf8-ranges) makes each piece a product of byte ranges.
  void utf8_pieces(char32_t lo, char32_t hi, std::vector<RegexId>& out) {
    if (lo > hi) return;
    const int n = utf8_length(lo);
    for (int i = 1; i < n; ++i) {
      const char32_t m = (char32_t{1} << (6 * i)) - 1;
      if ((lo & ~m) == (hi & ~m)) continue;
      if ((lo & m) != 0) {
        utf8_pieces(lo, lo | m, out);
        utf8_pieces((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        utf8_pieces(lo, (hi & ~m) - 1, out);
        utf8_pieces(hi & ~m, hi, out);
        return;
      }
    }
    uint8_t lo_bytes[4];
    uint8_t hi_bytes[4];
    utf8_encode(lo, n, lo_bytes);
    utf8_encode(hi, n, hi_bytes);
    RegexId piece = kEpsilonId;
    for (int i = n - 1; i >= 0; --i) {
      ByteSet s;
      s.add_range(lo_bytes[i], hi_bytes[i]);
      piece = concat(bytes(s), piece);
    }
    out.push_back(piece);
  }

  RegexId codepoints(std::span<const CodepointRange> ranges) {
    std::vector<CodepointRange> sorted;
    for (CodepointRange range : ranges) {
      range.hi = std::min<char32_t>(range.hi, 0x10FFFF);
      if (range.lo <= range.hi) sorted.push_back(range);
    }
    std::sort(sorted.begin(), sorted.end(),
              [](const CodepointRange& x, const CodepointRange& y) { return x.lo < y.lo; });
    std::vector<CodepointRange> merged;
    for (const CodepointRange& range : sorted) {
      if (!merged.empty() && range.lo <= merged.back().hi + 1) {
        merged.back().hi = std::max(merged.back().hi, range.hi);
      } else {
        merged.push_back(range);
      }
    }
    static constexpr CodepointRange kSameLength[] = {
        {0, 0x7F}, {0x80, 0x7FF}, {0x800, 0xD7FF}, {0xE000, 0xFFFF}, {0x10000, 0x10FFFF}};
    std::vector<RegexId> pieces;
    for (const CodepointRange& range : merged) {
      for (const CodepointRange& band : kSameLength) {
        utf8_pieces(std::max(range.lo, band.lo), std::min(range.hi, band.hi), pieces);
      }
    }
    return alt(pieces);
  }
};

RegexBuilder::RegexBuilder() : impl_(new Impl) {}
RegexBuilder::RegexBuilder(RegexBuilder&& other) noexcept : impl_(other.impl_) {
  other.impl_ = nullptr;
}
RegexBuilder& RegexBuilder::operator=(RegexBuilder&& other) noexcept {
  if (this != &other) {
    delete impl_;
    impl_ = other.impl_;
    other.impl_ = nullptr;
  }
  return *this;
}
RegexBuilder::~RegexBuilder() { delete impl_; }

RegexId RegexBuilder::nothing() const { return kNothingId; }
RegexId RegexBuilder::epsilon() const { return kEpsilonId; }
RegexId RegexBuilder::bytes(const ByteSet& set) { return impl_->bytes(set); }
RegexId RegexBuilder::byte(uint8_t b) {
  RegexId& id = impl_->byte_ids[b];
  if (id == kNothingId) {
    ByteSet s;
    s.add(b);
    id = impl_->bytes(s);
  }
  return id;
}
RegexId RegexBuilder::literal(std::string_view text) {
  RegexId r = kEpsilonId;
  for (size_t i = text.size(); i-- > 0;) r = impl_->concat(byte(static_cast<uint8_t>(text[i])), r);
  return r;
}
RegexId RegexBuilder::concat(std::span<const RegexId> parts) {
  if (std::find(parts.begin(), parts.end(), kNothingId) != parts.end()) return kNothingId;
  RegexId r = kEpsilonId;
  for (size_t i = parts.size(); i-- > 0;) r = impl_->concat(parts[i], r);
  return r;
}
RegexId RegexBuilder::concat(RegexId a, RegexId b) { return impl_->concat(a, b); }
RegexId RegexBuilder::alt(std::span<const RegexId> parts) { return impl_->alt(parts); }
RegexId RegexBuilder::alt(RegexId a, RegexId b) { return impl_->alt2(a, b); }
RegexId RegexBuilder::intersect(std::span<const RegexId> parts) { return impl_->intersect(parts); }
RegexId RegexBuilder::intersect(RegexId a, RegexId b) {
  const RegexId parts[2] = {a, b};
  return impl_->intersect(parts);
}
RegexId RegexBuilder::complement(RegexId r) { return impl_->complement(r); }
RegexId RegexBuilder::repeat(RegexId r, uint32_t min, uint32_t max) {
  return impl_->repeat(r, min, max);
}
RegexId RegexBuilder::any_bytes() { return kAnyBytesId; }
RegexId RegexBuilder::codepoints(std::span<const CodepointRange> ranges) {
  return impl_->codepoints(ranges);
}
bool RegexBuilder::nullable(RegexId r) const { return impl_->term(r).nullable; }
bool RegexBuilder::has_boolean(RegexId r) const { return impl_->term(r).has_boolean; }
RegexId RegexBuilder::horizon(RegexId r, uint32_t h) { return impl_->horizon(r, h); }
std::array<uint64_t, 2> RegexBuilder::structural_hash(RegexId r) const {
  return impl_->structural[r];
}
RegexId RegexBuilder::derive(RegexId r, uint8_t b) { return impl_->derive(r, b); }
std::optional<std::pair<RegexId, RegexId>> RegexBuilder::split_complement(RegexId r) {
  const auto& terms = impl_->terms;
  if (terms[r].kind != Kind::kAnd) return std::nullopt;
  std::vector<RegexId> rest;
  std::optional<RegexId> excluded;
  for (const RegexId k : impl_->kids(terms[r])) {
    if (terms[k].kind == Kind::kNot && !excluded) {
      excluded = terms[k].a;
    } else if (terms[k].kind == Kind::kNot) {
      return std::nullopt;
    } else {
      rest.push_back(k);
    }
  }
  if (!excluded) return std::nullopt;
  return std::pair<RegexId, RegexId>{impl_->intersect(rest), *excluded};
}

std::optional<std::vector<std::string>> RegexBuilder::finite_strings(RegexId r, size_t max_count,
                                                                     size_t max_length) {
  if (impl_->terms[r].has_boolean) return std::nullopt;
  std::vector<std::string> out;
  std::string prefix;
  // Depth first; a derivative that is not ∅ always matches something (no booleans).
  std::vector<std::pair<RegexId, unsigned>> stack = {{r, 0}};
  if (impl_->terms[r].nullable) out.emplace_back();
  while (!stack.empty()) {
    auto& [s, next_byte] = stack.back();
    if (next_byte == 256) {
      stack.pop_back();
      if (!prefix.empty()) prefix.pop_back();
      continue;
    }
    const auto b = static_cast<uint8_t>(next_byte++);
    const RegexId d = impl_->derive(s, b);
    if (d == kNothingId) continue;
    if (prefix.size() == max_length) return std::nullopt;
    prefix.push_back(static_cast<char>(b));
    if (impl_->terms[d].nullable) {
      if (out.size() == max_count) return std::nullopt;
      out.push_back(prefix);
    }
    stack.emplace_back(d, 0);
  }
  return out;
}

std::array<uint8_t, 256> RegexBuilder::byte_classes(RegexId r) { return impl_->byte_classes(r); }

bool RegexBuilder::emptiness_known(RegexId r) const {
  return !impl_->term(r).has_boolean || impl_->term(r).empty >= 0;
}
bool RegexBuilder::is_empty_language(RegexId r, size_t budget) {
  return impl_->is_empty_language(r, budget);
}
size_t RegexBuilder::term_count() const { return impl_->terms.size(); }
std::string RegexBuilder::to_string(RegexId r) const {
  std::string out;
  impl_->render(r, 0, out);
  return out;
}

}  // namespace synapse::constrain
