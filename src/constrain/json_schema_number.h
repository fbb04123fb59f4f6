// SPDX-License-Identifier: Apache-2.0
// Exact byte regexes for JSON numbers in a range, for JSON Schema's minimum / maximum /
// exclusive* keywords. Internal to json_schema*.cc.
//
// Why exact regexes and not a check after the lexeme: lexemes are greedy and the mask must
// refuse a digit the moment no number in range can start with the digits so far. Bounds are
// decimals (the shortest round-trip spelling of the schema's double, which is what a validator
// compares against), so 0.1 means 0.1 and not 0.1000000000000000055.
//
// Spellings: plain `-?(0|[1-9][0-9]*)(\.[0-9]+)?` and, for non-integers, exponent forms with a
// mantissa in [1, 10) — `[1-9](\.[0-9]+)?[eE][+-]?[0-9]+` — which is how nlohmann::json and
// Python write very large and very small doubles. An unbounded number also takes any mantissa.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "constrain/regex.h"

namespace synapse::constrain::json_schema_internal {

// A finite decimal: (-1)^negative × int_digits.frac_digits.
struct Decimal {
  bool negative = false;
  std::string int_digits;   // no leading zeros; empty when the magnitude is below 1
  std::string frac_digits;  // no trailing zeros
  bool is_zero() const { return int_digits.empty() && frac_digits.empty(); }
};

// Parses JSON number syntax (also leading '+' is refused); nullopt on anything else.
std::optional<Decimal> parse_decimal(std::string_view text);
// The decimal a JSON number value denotes (a double by its shortest round-trip spelling).
Decimal decimal_of(const nlohmann::ordered_json& number);
// -1, 0 or 1; -0 equals 0.
int compare_decimal(const Decimal& a, const Decimal& b);
bool is_integral(const Decimal& d);

struct NumberRange {
  bool integer = false;
  // Only numbers with a fractional part (from `not: {type: integer}`). Their spellings are
  // plain ones with a non-zero fraction digit and exponent forms with a negative exponent;
  // a non-integer above 1e15 written with a positive exponent is refused (never accepted
  // wrongly).
  bool non_integer = false;
  std::optional<Decimal> lower;
  bool lower_exclusive = false;
  std::optional<Decimal> upper;
  bool upper_exclusive = false;

  bool contains(const Decimal& d) const;
  // No number (no integer, when `integer`) lies in the range. Exact, without regexes.
  bool empty() const;
};

// The numbers in `range`, spelled as above.
RegexId number_range_regex(RegexBuilder& rx, const NumberRange& range);
// The spellings serialisers write of the one number `d` (1, 1.0, 1e0, 1e+00, ...), for const
// and enum values: finitely many, so a model cannot pad a fixed value forever.
RegexId number_equal_regex(RegexBuilder& rx, const Decimal& d);

}  // namespace synapse::constrain::json_schema_internal
