// SPDX-License-Identifier: Apache-2.0
// Byte regular expressions as hash-consed terms, matched by Brzozowski derivatives.
//
// Why derivatives: a lexer state is just a term, so the lazy DFA costs nothing to build up
// front (compile time matters: a schema must compile in about a millisecond), and intersection
// and complement come for free ("a string of at most 12 characters that also matches this
// pattern", "any key except the declared ones"). Terms are interned: equal terms get equal ids,
// so derivatives are memoized per (term, byte) and states are compared by id.
//
// Everything here is over bytes. Characters enter as UTF-8 sequences (codepoints()), so a
// regex over Unicode text and one over JSON-encoded text are both byte regexes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace synapse::constrain {

using RegexId = uint32_t;
inline constexpr uint32_t kUnbounded = UINT32_MAX;

// A set of byte values.
class ByteSet {
 public:
  void add(uint8_t b) { words_[b >> 6] |= uint64_t{1} << (b & 63); }
  void add_range(uint8_t lo, uint8_t hi) {
    for (unsigned b = lo; b <= hi; ++b) add(static_cast<uint8_t>(b));
  }
  bool contains(uint8_t b) const { return (words_[b >> 6] >> (b & 63)) & 1; }
  bool empty() const { return (words_[0] | words_[1] | words_[2] | words_[3]) == 0; }
  ByteSet complement() const;
  bool operator==(const ByteSet&) const = default;
  const std::array<uint64_t, 4>& words() const { return words_; }

 private:
  std::array<uint64_t, 4> words_{};
};

// An inclusive range of Unicode scalar values.
struct CodepointRange {
  char32_t lo = 0;
  char32_t hi = 0;
};

// Builds, interns and derives regexes. Not thread-safe: one builder belongs to one compiled
// grammar, and whoever derives at run time holds the grammar's lock.
class RegexBuilder {
 public:
  RegexBuilder();
  RegexBuilder(const RegexBuilder&) = delete;
  RegexBuilder& operator=(const RegexBuilder&) = delete;
  RegexBuilder(RegexBuilder&&) noexcept;
  RegexBuilder& operator=(RegexBuilder&&) noexcept;
  ~RegexBuilder();

  RegexId nothing() const;  // matches no string (the dead state)
  RegexId epsilon() const;  // matches only ""
  RegexId bytes(const ByteSet& set);
  RegexId byte(uint8_t b);
  RegexId literal(std::string_view text);  // exactly these bytes
  RegexId concat(std::span<const RegexId> parts);
  RegexId concat(RegexId a, RegexId b);
  RegexId alt(std::span<const RegexId> parts);
  RegexId alt(RegexId a, RegexId b);
  RegexId intersect(std::span<const RegexId> parts);
  RegexId intersect(RegexId a, RegexId b);
  RegexId complement(RegexId r);  // every byte string r does not match
  // r{min,max}; max may be kUnbounded. r{0,kUnbounded} is r*.
  RegexId repeat(RegexId r, uint32_t min, uint32_t max);
  RegexId any_bytes();  // every byte string (.* over bytes)
  // One code point from `ranges`, UTF-8 encoded (surrogates excluded).
  RegexId codepoints(std::span<const CodepointRange> ranges);

  bool nullable(RegexId r) const;  // matches ""
  bool is_nothing(RegexId r) const { return r == nothing(); }
  // The derivative of r by one byte (the strings s with b·s in r), memoized.
  RegexId derive(RegexId r, uint8_t b);
  // Class ids of the 256 bytes: bytes of one class have the same derivative of r.
  std::array<uint8_t, 256> byte_classes(RegexId r);
  // True when r matches no string at all. Syntactic for terms without intersection or
  // complement; otherwise explores derivatives up to `budget` states and answers false (not
  // empty) when the budget runs out, so a dead end is possible but never a wrong refusal.
  bool is_empty_language(RegexId r, size_t budget = 2000);
  // is_empty_language(r) has been decided exactly (always, without intersection or complement;
  // otherwise once an exploration finished or found a match).
  bool emptiness_known(RegexId r) const;

  // r with its counted repeats widened where no text of at most h bytes can tell the
  // difference (a bound of h or more becomes unbounded): the same decisions on every such
  // text. Terms using intersection or complement are returned unchanged.
  RegexId horizon(RegexId r, uint32_t h);
  // Uses intersection or complement somewhere (emptiness is then not syntactic).
  bool has_boolean(RegexId r) const;
  // A 128-bit hash of r's structure that is the same in every builder for equal terms.
  std::array<uint64_t, 2> structural_hash(RegexId r) const;

  // r as P & ~F (an intersection with exactly one complemented part): {P, F}.
  std::optional<std::pair<RegexId, RegexId>> split_complement(RegexId r);
  // Every string r matches, when there are at most `max_count`, none over `max_length` bytes
  // (r without intersection or complement); nullopt otherwise.
  std::optional<std::vector<std::string>> finite_strings(RegexId r, size_t max_count,
                                                         size_t max_length);

  size_t term_count() const;
  std::string to_string(RegexId r) const;  // for tests and error messages

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace synapse::constrain
