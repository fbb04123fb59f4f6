// SPDX-License-Identifier: Apache-2.0
#include "constrain/json_schema_number.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace synapse::constrain::json_schema_internal {
namespace {

// Exponents past this are not doubles; parse_decimal refuses them rather than building
// megabyte digit strings.
constexpr int kMaxDecimalExponent = 400;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

RegexId alt_of(RegexBuilder& rx, std::initializer_list<RegexId> parts) {
  return rx.alt(std::span<const RegexId>(parts.begin(), parts.size()));
}

// Regexes over the magnitude of a number (no sign). A digit string compared as a fraction is
// compared lexicographically with zeros padded on the right; that is what every "_ge"/"_le"
// below does, one digit at a time.
class MagnitudeRegexes {
 public:
  MagnitudeRegexes(RegexBuilder& rx, bool fraction_allowed)
      : rx_(rx), fraction_allowed_(fraction_allowed) {}

  // Plain spellings (0|[1-9][0-9]*)(\.[0-9]+)? of magnitudes >= d (> d when exclusive).
  RegexId plain_ge(const Decimal& d, bool exclusive) {
    const size_t n = d.int_digits.size();
    const RegexId longer =
        seq({digit(1, 9), digits(static_cast<uint32_t>(n), kUnbounded), fraction_any()});
    if (n == 0) return rx_.alt(longer, seq({lit("0"), fraction_ge(d.frac_digits, exclusive)}));
    // Same number of integer digits: compare digit by digit, built from the last digit back.
    RegexId tail = fraction_ge(d.frac_digits, exclusive);
    for (size_t pos = n; pos-- > 0;) {
      const int t = d.int_digits[pos] - '0';
      const uint32_t rest = static_cast<uint32_t>(n - pos - 1);
      tail = rx_.alt(seq({digit(t + 1, 9), digits(rest, rest), fraction_any()}),
                     seq({digit(t, t), tail}));
    }
    return rx_.alt(longer, tail);
  }

  // Plain spellings of magnitudes <= d (< d when exclusive).
  RegexId plain_le(const Decimal& d, bool exclusive) {
    const size_t n = d.int_digits.size();
    if (n == 0) return seq({lit("0"), fraction_le(d.frac_digits, exclusive)});
    RegexId shorter = lit("0");
    if (n >= 2) shorter = rx_.alt(shorter, seq({digit(1, 9), digits(0, uint32_t(n - 2))}));
    shorter = seq({shorter, fraction_any()});
    RegexId tail = fraction_le(d.frac_digits, exclusive);
    for (size_t pos = n; pos-- > 0;) {
      const int t = d.int_digits[pos] - '0';
      const uint32_t rest = static_cast<uint32_t>(n - pos - 1);
      tail = rx_.alt(seq({digit(pos == 0 ? 1 : 0, t - 1), digits(rest, rest), fraction_any()}),
                     seq({digit(t, t), tail}));
    }
    return rx_.alt(shorter, tail);
  }

  RegexId fraction_any() {
    if (!fraction_allowed_) return rx_.epsilon();
    return rx_.repeat(seq({lit("."), digits(1, kUnbounded)}), 0, 1);
  }

  RegexId digit(int lo, int hi) {
    if (lo > hi) return rx_.nothing();
    ByteSet set;
    set.add_range(static_cast<uint8_t>('0' + lo), static_cast<uint8_t>('0' + hi));
    return rx_.bytes(set);
  }
  RegexId digits(uint32_t min, uint32_t max) { return rx_.repeat(digit(0, 9), min, max); }
  RegexId lit(std::string_view s) { return rx_.literal(s); }
  RegexId seq(std::initializer_list<RegexId> parts) {
    return rx_.concat(std::span<const RegexId>(parts.begin(), parts.size()));
  }

 private:
  // Digit strings s (possibly empty) with 0.s >= 0.u (> when exclusive).
  RegexId rest_ge(std::string_view u, bool exclusive) {
    RegexId tail = exclusive ? seq({digits(0, kUnbounded), digit(1, 9), digits(0, kUnbounded)})
                             : digits(0, kUnbounded);
    for (size_t pos = u.size(); pos-- > 0;) {
      const int t = u[pos] - '0';
      tail = rx_.alt(seq({digit(t + 1, 9), digits(0, kUnbounded)}), seq({digit(t, t), tail}));
    }
    return tail;
  }
  // Non-empty digit strings s with 0.s <= 0.u (< when exclusive); u has no trailing zeros.
  RegexId rest_le_nonempty(std::string_view u, bool exclusive) {
    // After u is used up only zeros may follow (none at all when exclusive).
    RegexId tail = exclusive ? rx_.nothing() : rx_.repeat(lit("0"), 0, kUnbounded);
    for (size_t pos = u.size(); pos-- > 0;) {
      const int t = u[pos] - '0';
      RegexId here =
          rx_.alt(seq({digit(0, t - 1), digits(0, kUnbounded)}), seq({digit(t, t), tail}));
      // A shorter s stops before this digit; its value is below 0.u because u's rest is
      // non-zero. Allowed everywhere except as the whole (empty) fraction.
      tail = pos == 0 ? here : rx_.alt(rx_.epsilon(), here);
    }
    return tail;
  }
  // Optional fractions (\.[0-9]+)? whose value is >= 0.t (> when exclusive).
  RegexId fraction_ge(std::string_view t, bool exclusive) {
    if (!fraction_allowed_) return t.empty() && !exclusive ? rx_.epsilon() : rx_.nothing();
    if (t.empty() && !exclusive) return fraction_any();
    return seq({lit("."), rest_ge(t, exclusive)});
  }
  // Optional fractions whose value is <= 0.t (< when exclusive).
  RegexId fraction_le(std::string_view t, bool exclusive) {
    if (!fraction_allowed_) return t.empty() && exclusive ? rx_.nothing() : rx_.epsilon();
    if (t.empty()) {
      if (exclusive) return rx_.nothing();
      return rx_.alt(rx_.epsilon(), seq({lit("."), rx_.repeat(lit("0"), 1, kUnbounded)}));
    }
    return rx_.alt(rx_.epsilon(), seq({lit("."), rest_le_nonempty(t, exclusive)}));
  }

  RegexBuilder& rx_;
  bool fraction_allowed_;
};

Decimal from_int(int64_t v) {
  Decimal d;
  d.negative = v < 0;
  const uint64_t mag = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
  if (mag != 0) d.int_digits = std::to_string(mag);
  return d;
}

Decimal abs_of(Decimal d) {
  d.negative = false;
  return d;
}

// Normalised scientific form of a non-zero magnitude: mantissa in [1, 10) and exponent.
struct Scientific {
  Decimal mantissa;
  int64_t exponent = 0;
};

Scientific scientific_of(const Decimal& d) {
  Scientific s;
  std::string all = d.int_digits + d.frac_digits;
  size_t first = all.find_first_not_of('0');
  s.exponent = static_cast<int64_t>(d.int_digits.size()) - 1 - static_cast<int64_t>(first);
  all = all.substr(first);
  s.mantissa.int_digits = all.substr(0, 1);
  s.mantissa.frac_digits = all.substr(1);
  while (!s.mantissa.frac_digits.empty() && s.mantissa.frac_digits.back() == '0') {
    s.mantissa.frac_digits.pop_back();
  }
  return s;
}

class NumberRegexes {
 public:
  NumberRegexes(RegexBuilder& rx, bool integer)
      : rx_(rx), integer_(integer), mag_(rx, !integer), int_mag_(rx, false) {}

  // Numbers >= bound (> when exclusive), both signs.
  RegexId signed_ge(const Decimal& bound, bool exclusive) {
    const Decimal mag = abs_of(bound);
    const bool below_zero = bound.negative && !bound.is_zero();
    const RegexId positive = below_zero ? any_magnitude() : magnitude_ge(mag, exclusive);
    const RegexId negative =
        (bound.negative || bound.is_zero()) ? magnitude_le(mag, exclusive) : rx_.nothing();
    return rx_.alt(positive, rx_.concat(rx_.literal("-"), negative));
  }
  // Numbers <= bound (< when exclusive), both signs.
  RegexId signed_le(const Decimal& bound, bool exclusive) {
    const Decimal mag = abs_of(bound);
    const bool above_zero = !bound.negative && !bound.is_zero();
    const RegexId positive =
        (bound.negative && !bound.is_zero()) ? rx_.nothing() : magnitude_le(mag, exclusive);
    const RegexId negative = above_zero ? any_magnitude() : magnitude_ge(mag, exclusive);
    return rx_.alt(positive, rx_.concat(rx_.literal("-"), negative));
  }

  RegexId any_number() { return rx_.concat(rx_.repeat(rx_.literal("-"), 0, 1), any_magnitude()); }

  RegexId any_magnitude() {
    const RegexId integer_part =
        rx_.alt(mag_.lit("0"), mag_.seq({mag_.digit(1, 9), mag_.digits(0, kUnbounded)}));
    if (integer_) return rx_.alt(integer_part, large_integer());
    return mag_.seq({integer_part, mag_.fraction_any(), rx_.repeat(exponent_any(), 0, 1)});
  }

  // Integers from 1e16 up as serialisers write large doubles (1.2345678910111214e+52): a
  // mantissa of at most 16 fraction digits times 10^16 or more is always whole.
  RegexId large_integer() {
    ByteSet e;
    e.add('e');
    e.add('E');
    const RegexId mantissa = mag_.seq(
        {mag_.digit(1, 9), rx_.repeat(mag_.seq({mag_.lit("."), mag_.digits(1, 16)}), 0, 1)});
    return mag_.seq({mantissa, rx_.bytes(e), exponent_ge(16)});
  }

 private:
  RegexId magnitude_ge(const Decimal& d, bool exclusive) {
    RegexId plain = mag_.plain_ge(d, exclusive);
    if (integer_) return plain;
    // Every exponent spelling has a mantissa >= 1, so all of them exceed zero.
    if (d.is_zero()) return rx_.alt(plain, exponent_form(mantissa(), exponent_any_value()));
    const Scientific s = scientific_of(d);
    return alt_of(rx_,
                  {plain, exponent_form(mantissa(), exponent_ge(s.exponent + 1)),
                   exponent_form(rx_.intersect(mantissa(), mag_.plain_ge(s.mantissa, exclusive)),
                                 exponent_eq(s.exponent))});
  }
  RegexId magnitude_le(const Decimal& d, bool exclusive) {
    RegexId plain = mag_.plain_le(d, exclusive);
    if (integer_ || d.is_zero()) return plain;
    const Scientific s = scientific_of(d);
    return alt_of(rx_,
                  {plain, exponent_form(mantissa(), exponent_le(s.exponent - 1)),
                   exponent_form(rx_.intersect(mantissa(), mag_.plain_le(s.mantissa, exclusive)),
                                 exponent_eq(s.exponent))});
  }

  RegexId mantissa() { return mag_.seq({mag_.digit(1, 9), mag_.fraction_any()}); }
  RegexId exponent_form(RegexId mant, RegexId exponent_value) {
    ByteSet e;
    e.add('e');
    e.add('E');
    return mag_.seq({mant, rx_.bytes(e), exponent_value});
  }
  RegexId exponent_any() {
    ByteSet e;
    e.add('e');
    e.add('E');
    return mag_.seq({rx_.bytes(e), exponent_any_value()});
  }
  RegexId exponent_any_value() {
    ByteSet sign;
    sign.add('+');
    sign.add('-');
    return mag_.seq({rx_.repeat(rx_.bytes(sign), 0, 1), mag_.digits(1, kUnbounded)});
  }
  // Exponent spellings ([+-]?[0-9]+, leading zeros allowed) of values >= k.
  RegexId exponent_ge(int64_t k) {
    const RegexId zeros = rx_.repeat(rx_.literal("0"), 0, kUnbounded);
    const RegexId plus = rx_.repeat(rx_.literal("+"), 0, 1);
    const RegexId int_any = int_mag_.seq({int_mag_.digits(1, kUnbounded)});
    if (k <= 0) {
      return rx_.alt(mag_.seq({plus, int_any}),
                     mag_.seq({rx_.literal("-"), zeros, int_mag_.plain_le(from_int(-k), false)}));
    }
    return mag_.seq({plus, zeros, int_mag_.plain_ge(from_int(k), false)});
  }
  // Values <= k.
  RegexId exponent_le(int64_t k) {
    const RegexId zeros = rx_.repeat(rx_.literal("0"), 0, kUnbounded);
    const RegexId plus = rx_.repeat(rx_.literal("+"), 0, 1);
    if (k >= 0) {
      return rx_.alt(mag_.seq({plus, zeros, int_mag_.plain_le(from_int(k), false)}),
                     mag_.seq({rx_.literal("-"), int_mag_.digits(1, kUnbounded)}));
    }
    return mag_.seq({rx_.literal("-"), zeros, int_mag_.plain_ge(from_int(-k), false)});
  }
  RegexId exponent_eq(int64_t k) { return rx_.intersect(exponent_ge(k), exponent_le(k)); }

  RegexBuilder& rx_;
  bool integer_;
  MagnitudeRegexes mag_;
  MagnitudeRegexes int_mag_;
};

// The magnitude's integer part plus one / minus one (digit strings, no leading zeros).
std::string increment(std::string digits) {
  for (size_t i = digits.size(); i-- > 0;) {
    if (digits[i] != '9') {
      ++digits[i];
      return digits;
    }
    digits[i] = '0';
  }
  return "1" + digits;
}
std::string decrement(std::string digits) {  // digits > 0
  for (size_t i = digits.size(); i-- > 0;) {
    if (digits[i] != '0') {
      --digits[i];
      break;
    }
    digits[i] = '9';
  }
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size()));
  return digits;
}

// The smallest integer >= d (> d when exclusive).
Decimal integer_above(const Decimal& d, bool exclusive) {
  Decimal n;
  n.negative = d.negative;
  n.int_digits = d.int_digits;
  // Truncation moves toward zero: up for negatives, down for positives.
  const bool truncated_down = !d.frac_digits.empty() && !d.negative;
  const bool step_up = truncated_down || (d.frac_digits.empty() && exclusive);
  if (step_up) {
    if (n.negative && !n.int_digits.empty()) {
      n.int_digits = decrement(n.int_digits);
    } else {
      n.negative = false;
      n.int_digits = increment(n.int_digits);
    }
  }
  if (n.int_digits.empty()) n.negative = false;
  return n;
}

}  // namespace

std::optional<Decimal> parse_decimal(std::string_view text) {
  size_t i = 0;
  Decimal d;
  if (i < text.size() && text[i] == '-') {
    d.negative = true;
    ++i;
  }
  const size_t int_begin = i;
  while (i < text.size() && is_digit(text[i])) ++i;
  std::string int_part(text.substr(int_begin, i - int_begin));
  if (int_part.empty() || (int_part.size() > 1 && int_part[0] == '0')) return std::nullopt;
  std::string frac_part;
  if (i < text.size() && text[i] == '.') {
    const size_t frac_begin = ++i;
    while (i < text.size() && is_digit(text[i])) ++i;
    frac_part = std::string(text.substr(frac_begin, i - frac_begin));
    if (frac_part.empty()) return std::nullopt;
  }
  int64_t exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) exp_negative = text[i++] == '-';
    const size_t exp_begin = i;
    while (i < text.size() && is_digit(text[i])) {
      exponent = exponent * 10 + (text[i] - '0');
      if (exponent > kMaxDecimalExponent) return std::nullopt;
      ++i;
    }
    if (i == exp_begin) return std::nullopt;
    if (exp_negative) exponent = -exponent;
  }
  if (i != text.size()) return std::nullopt;
  // Move the decimal point by the exponent, then trim zeros at both ends.
  std::string all = int_part + frac_part;
  int64_t point = static_cast<int64_t>(int_part.size()) + exponent;
  if (point < 0) {
    all.insert(0, static_cast<size_t>(-point), '0');
    point = 0;
  }
  if (point > static_cast<int64_t>(all.size()))
    all.append(static_cast<size_t>(point) - all.size(), '0');
  d.int_digits = all.substr(0, static_cast<size_t>(point));
  d.frac_digits = all.substr(static_cast<size_t>(point));
  d.int_digits.erase(0, std::min(d.int_digits.find_first_not_of('0'), d.int_digits.size()));
  while (!d.frac_digits.empty() && d.frac_digits.back() == '0') d.frac_digits.pop_back();
  return d;
}

Decimal decimal_of(const nlohmann::ordered_json& number) {
  // dump() writes a double as its shortest round-trip spelling, which parses back exactly.
  std::optional<Decimal> d = parse_decimal(number.dump());
  return d ? *d : Decimal{};
}

int compare_decimal(const Decimal& a, const Decimal& b) {
  const bool a_neg = a.negative && !a.is_zero();
  const bool b_neg = b.negative && !b.is_zero();
  if (a_neg != b_neg) return a_neg ? -1 : 1;
  int mag = 0;
  if (a.int_digits.size() != b.int_digits.size()) {
    mag = a.int_digits.size() < b.int_digits.size() ? -1 : 1;
  } else if (int c = a.int_digits.compare(b.int_digits); c != 0) {
    mag = c < 0 ? -1 : 1;
  } else if (int f = a.frac_digits.compare(b.frac_digits); f != 0) {
    // Without trailing zeros, string order of fraction digits is numeric order.
    mag = f < 0 ? -1 : 1;
  }
  return a_neg ? -mag : mag;
}

bool is_integral(const Decimal& d) { return d.frac_digits.empty(); }

bool NumberRange::contains(const Decimal& d) const {
  if (integer && !is_integral(d)) return false;
  if (non_integer && is_integral(d)) return false;
  if (lower) {
    const int c = compare_decimal(d, *lower);
    if (c < 0 || (c == 0 && lower_exclusive)) return false;
  }
  if (upper) {
    const int c = compare_decimal(d, *upper);
    if (c > 0 || (c == 0 && upper_exclusive)) return false;
  }
  return true;
}

bool NumberRange::empty() const {
  if (integer && non_integer) return true;
  if (!lower || !upper) return false;
  const int c = compare_decimal(*lower, *upper);
  if (c > 0 || (c == 0 && (lower_exclusive || upper_exclusive))) return true;
  if (non_integer) return c == 0 && is_integral(*lower);
  if (!integer) return false;  // between two distinct decimals lie infinitely many
  return !contains(integer_above(*lower, lower_exclusive));
}

namespace {

// Spellings of numbers with a fractional part (see NumberRange::non_integer).
RegexId non_integer_regex(RegexBuilder& rx) {
  MagnitudeRegexes m(rx, true);
  ByteSet e;
  e.add('e');
  e.add('E');
  const RegexId plain =
      m.seq({rx.alt(m.lit("0"), m.seq({m.digit(1, 9), m.digits(0, kUnbounded)})), m.lit("."),
             m.digits(0, kUnbounded), m.digit(1, 9), m.digits(0, kUnbounded)});
  const RegexId small = m.seq({m.digit(1, 9), m.fraction_any(), rx.bytes(e), m.lit("-"),
                               m.digits(0, kUnbounded), m.digit(1, 9), m.digits(0, kUnbounded)});
  return m.seq({rx.repeat(m.lit("-"), 0, 1), rx.alt(plain, small)});
}

RegexId bounded_regex(RegexBuilder& rx, const NumberRange& range) {
  NumberRegexes n(rx, range.integer);
  if (!range.lower && !range.upper) return n.any_number();
  if (range.lower && range.upper) {
    const int c = compare_decimal(*range.lower, *range.upper);
    if (c > 0 || (c == 0 && (range.lower_exclusive || range.upper_exclusive))) {
      return rx.nothing();
    }
  }
  RegexId ge = range.lower ? n.signed_ge(*range.lower, range.lower_exclusive) : rx.nothing();
  RegexId le = range.upper ? n.signed_le(*range.upper, range.upper_exclusive) : rx.nothing();
  if (!range.upper) return ge;
  if (!range.lower) return le;
  return rx.intersect(ge, le);
}

}  // namespace

RegexId number_range_regex(RegexBuilder& rx, const NumberRange& range) {
  if (range.integer && range.non_integer) return rx.nothing();
  const RegexId r = bounded_regex(rx, range);
  return range.non_integer ? rx.intersect(r, non_integer_regex(rx)) : r;
}

RegexId number_equal_regex(RegexBuilder& rx, const Decimal& d) {
  // The spellings serialisers write for this value, not every spelling of it: a fixed value
  // with unboundedly many spellings ("333.000…", "1e+0002") lets a model write zeros forever.
  // Fraction digits f as they are, or ".0" when f is empty (a double holding an integer);
  // exponents with at most two leading zeros ("1e-07", as printf writes them).
  const auto fraction = [&rx](const std::string& f) {
    if (f.empty()) return rx.repeat(rx.literal(".0"), 0, 1);
    return rx.literal("." + f);
  };
  const RegexId sign = d.negative && !d.is_zero() ? rx.literal("-")
                       : d.is_zero()              ? rx.repeat(rx.literal("-"), 0, 1)
                                                  : rx.epsilon();
  const RegexId plain =
      rx.concat(rx.literal(d.int_digits.empty() ? "0" : d.int_digits), fraction(d.frac_digits));
  if (d.is_zero()) return rx.concat(sign, plain);
  const Scientific s = scientific_of(abs_of(d));
  ByteSet e;
  e.add('e');
  e.add('E');
  RegexId exponent_value;
  {
    // The exponent k: [+]?0{0,2}k, -0{0,2}k, or [+-]?0{1,3} for zero.
    const RegexId zeros = rx.repeat(rx.literal("0"), 0, 2);
    if (s.exponent == 0) {
      ByteSet sign_set;
      sign_set.add('+');
      sign_set.add('-');
      exponent_value =
          rx.concat(rx.repeat(rx.bytes(sign_set), 0, 1), rx.repeat(rx.literal("0"), 1, 3));
    } else if (s.exponent > 0) {
      const RegexId parts[] = {rx.repeat(rx.literal("+"), 0, 1), zeros,
                               rx.literal(std::to_string(s.exponent))};
      exponent_value = rx.concat(parts);
    } else {
      const RegexId parts[] = {rx.literal("-"), zeros, rx.literal(std::to_string(-s.exponent))};
      exponent_value = rx.concat(parts);
    }
  }
  const RegexId scientific_parts[] = {rx.literal(s.mantissa.int_digits),
                                      fraction(s.mantissa.frac_digits), rx.bytes(e),
                                      exponent_value};
  return rx.concat(sign, rx.alt(plain, rx.concat(scientific_parts)));
}

}  // namespace synapse::constrain::json_schema_internal
