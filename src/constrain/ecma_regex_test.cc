// SPDX-License-Identifier: Apache-2.0
#include "constrain/ecma_regex.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tokenizer/unicode.h"

namespace synapse::constrain {
namespace {

bool matches(RegexBuilder& rx, RegexId r, std::string_view text) {
  for (char c : text) r = rx.derive(r, static_cast<uint8_t>(c));
  return rx.nullable(r);
}

std::string utf8(char32_t cp) {
  std::string out;
  tokenizer::append_utf8(cp, out);
  return out;
}

// The text between the quotes of nlohmann::json's canonical dump of `text`.
std::string json_inner(const std::string& text) {
  const std::string dumped = nlohmann::json(text).dump();
  return dumped.substr(1, dumped.size() - 2);
}

struct Compiled {
  RegexBuilder rx;
  RegexId r = 0;
  bool matches(std::string_view text) { return constrain::matches(rx, r, text); }
};

// Compiles `pattern` into a fresh builder, failing the test on an error.
Compiled compile(std::string_view pattern, bool search = true,
                 CharEncoding encoding = CharEncoding::kUtf8) {
  Compiled c;
  Result<RegexId> r = compile_ecma_regex(c.rx, pattern, encoding, search);
  EXPECT_TRUE(r.ok()) << pattern << ": " << r.status().to_string();
  if (r.ok()) c.r = *r;
  return c;
}

void expect_all(std::string_view pattern, const std::vector<std::string>& yes,
                const std::vector<std::string>& no, bool search = true) {
  Compiled c = compile(pattern, search);
  for (const std::string& s : yes) EXPECT_TRUE(c.matches(s)) << pattern << " should match " << s;
  for (const std::string& s : no)
    EXPECT_FALSE(c.matches(s)) << pattern << " should not match " << s;
}

TEST(EcmaRegex, LiteralsSearchAndFullMatch) {
  expect_all("abc", {"abc", "xxabcxx", "abcabc"}, {"", "ab", "abxc"});
  expect_all("abc", {"abc"}, {"xabc", "abcx", ""}, false);
  expect_all("", {"", "anything"}, {});
  expect_all("héllo", {"héllo", "ahéllob"}, {"hello"});
}

TEST(EcmaRegex, Anchors) {
  expect_all("^abc", {"abc", "abcx"}, {"xabc"});
  expect_all("abc$", {"abc", "xabc"}, {"abcx"});
  expect_all("^abc$", {"abc"}, {"abcx", "xabc"});
  // Each top-level alternative keeps its own anchor.
  expect_all("^a|b$", {"a", "ax", "xb", "b"}, {"xa", "bx", ""});
  expect_all("^(?:a|b)$", {"a", "b"}, {"ab", "xa"});
  // Without search, anchors change nothing.
  expect_all("^ab$", {"ab"}, {"abab"}, false);
}

TEST(EcmaRegex, ClassEscapes) {
  expect_all("^\\d+$", {"0", "0123456789"}, {"", "12a", "\xD9\xA1"});  // U+0661, Arabic one
  expect_all("^\\D$", {"a", "\xD9\xA1", " "}, {"5"});
  expect_all("^\\w+$", {"az_AZ09"}, {"é", "a-b"});
  expect_all("^\\W$", {"é", "-", " "}, {"a", "_"});
  expect_all(
      "^\\s$",
      {" ", "\t", "\n", "\r", "\v", "\f", utf8(0xA0), utf8(0x1680), utf8(0x2000), utf8(0x200A),
       utf8(0x2028), utf8(0x2029), utf8(0x202F), utf8(0x205F), utf8(0x3000), utf8(0xFEFF)},
      {"a", utf8(0x200B), ""});
  expect_all("^\\S$", {"a", utf8(0x200B)}, {" ", utf8(0x3000), "\n"});
}

TEST(EcmaRegex, CharacterEscapes) {
  expect_all("^\\t\\n\\r\\f\\v$", {"\t\n\r\f\v"}, {"tnrfv"});
  expect_all("^a\\0b$", {std::string("a\0b", 3)}, {"a0b"});
  expect_all("^\\x41\\u0042\\u{43}\\u{1F600}$", {"ABC😀"}, {"ABC"});
  expect_all("^\\uD83D\\uDE00$", {"😀"}, {"\xED\xA0\xBD\xED\xB8\x80"});
  expect_all("^\\cJ$", {"\n"}, {"cJ"});
  expect_all("^\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\\\\\/\\^\\$\\-$", {".*+?()[]{}|\\/^$-"}, {});
  expect_all("^\\é$", {"é"}, {"e"});
}

TEST(EcmaRegex, Dot) {
  expect_all("^.$", {"a", "é", "😀", "\t", std::string(1, '\0')},
             {"", "ab", "\n", "\r", utf8(0x2028), utf8(0x2029)});
}

TEST(EcmaRegex, CharacterClasses) {
  expect_all("^[a-c]+$", {"abcabc"}, {"abcd", ""});
  expect_all("^[^a-c]$", {"d", "é", "\n", "😀"}, {"a", "b", "c"});
  expect_all("^[\\d_]$", {"5", "_"}, {"a"});
  expect_all("^[\\w-]+$", {"a-b_c"}, {"a b"});
  expect_all("^[a\\-z]$", {"a", "-", "z"}, {"b"});
  expect_all("^[-a]$", {"-", "a"}, {"b"});
  expect_all("^[a-]$", {"-", "a"}, {"b"});
  expect_all("^[\\d-z]$", {"1", "-", "z"}, {"y"});  // Annex B: a class escape ends no range
  expect_all("^[\\b]$", {"\b"}, {"b"});
  expect_all("^[α-ω]+$", {"αβγω"}, {"a"});
  expect_all("^[^]$", {"\n", "a"}, {""});
  expect_all("[]", {}, {"", "a", "[]"});
  expect_all("^[\\s\\S]$", {"\n", "a", "😀"}, {"ab"});
  expect_all("^[\\u0041-\\u0043]$", {"A", "C"}, {"D"});
  expect_all("^[.]$", {"."}, {"a"});
}

TEST(EcmaRegex, GroupsAndAlternation) {
  expect_all("^(ab)+$", {"ab", "abab"}, {"", "aba"});
  expect_all("^(?:ab|cd){2}$", {"abcd", "cdcd"}, {"ab", "abcdab"});
  expect_all("^(?<year>\\d{4})-(?<month>\\d\\d)$", {"2024-05"}, {"24-05"});
  expect_all("^(cat|dog|)$", {"cat", "dog", ""}, {"cow"});
  expect_all("^((a|b)(c|d))*$", {"", "ac", "bdad"}, {"ab"});
}

TEST(EcmaRegex, Quantifiers) {
  expect_all("^a{3}$", {"aaa"}, {"aa", "aaaa"});
  expect_all("^a{2,}$", {"aa", "aaaaa"}, {"a"});
  expect_all("^a{2,3}$", {"aa", "aaa"}, {"a", "aaaa"});
  expect_all("^a*?b+?c??$", {"b", "aabbc"}, {"ac", "abcc"});
  expect_all("^a{2,3}?$", {"aa", "aaa"}, {"a"});
  expect_all("^x?y*z+$", {"z", "xyyzz"}, {"xy"});
  // Annex B: braces that are no quantifier are literals.
  expect_all("^x{,3}$", {"x{,3}"}, {"xxx"});
  expect_all("^{}$", {"{}"}, {""});
  expect_all("^a{1$", {"a{1"}, {"a"});
  expect_all("^]}$", {"]}"}, {});
}

TEST(EcmaRegex, JsonStringEncoding) {
  const auto json = CharEncoding::kJsonString;
  Compiled quote = compile("^a\"b$", true, json);
  EXPECT_TRUE(quote.matches("a\\\"b"));
  EXPECT_FALSE(quote.matches("a\"b"));
  Compiled not_x = compile("^[^x]$", true, json);
  EXPECT_TRUE(not_x.matches("\\n"));
  EXPECT_TRUE(not_x.matches("\\u0001"));
  EXPECT_TRUE(not_x.matches("\\\\"));
  EXPECT_TRUE(not_x.matches("é"));
  EXPECT_FALSE(not_x.matches("\n"));
  EXPECT_FALSE(not_x.matches("x"));
  EXPECT_FALSE(not_x.matches("\\u000a"));
  EXPECT_FALSE(not_x.matches("\\"));
  Compiled backslash = compile("^\\\\$", true, json);
  EXPECT_TRUE(backslash.matches("\\\\"));
  EXPECT_FALSE(backslash.matches("\\"));
  // Search mode's open ends are JSON-encoded text too.
  Compiled search = compile("b", true, json);
  EXPECT_TRUE(search.matches("a\\nb\\\""));
  EXPECT_FALSE(search.matches("a\nb"));
  EXPECT_FALSE(search.matches("b\\"));
  Compiled dot = compile("^.$", true, json);
  EXPECT_TRUE(dot.matches("\\t"));
  EXPECT_FALSE(dot.matches("\\n"));
  EXPECT_FALSE(dot.matches("\\r"));
}

TEST(EcmaRegex, EncodedCharsAgreeWithNlohmann) {
  RegexBuilder rx;
  const RegexId any = any_encoded_char(rx, CharEncoding::kJsonString);
  std::vector<char32_t> samples;
  for (char32_t cp = 0; cp < 0x100; ++cp) samples.push_back(cp);
  for (char32_t cp : {0x7FFu, 0x800u, 0x2028u, 0xFFFFu, 0x10000u, 0x10FFFFu}) samples.push_back(cp);
  for (char32_t cp : samples) {
    const std::string encoded = json_inner(utf8(cp));
    EXPECT_TRUE(matches(rx, any, encoded)) << encoded;
    const CodepointRange one[] = {{cp, cp}};
    const RegexId exactly = encoded_chars(rx, one, CharEncoding::kJsonString);
    EXPECT_TRUE(matches(rx, exactly, encoded)) << encoded;
    const CodepointRange other[] = {{cp + 1, cp + 1}};
    EXPECT_FALSE(matches(rx, encoded_chars(rx, other, CharEncoding::kJsonString), encoded));
  }
  EXPECT_EQ(json_inner("\x01"), "\\u0001");  // lowercase hex, as the header promises
  EXPECT_EQ(json_inner("\x1f"), "\\u001f");
  // One spelling per character: the non-canonical ones are refused.
  for (std::string other :
       {"\\u0041", "\\/", "\\u000a", "\\u001F", "\x01", "\"", "\\", "\\u00e9", "\\ud83d\\ude00"}) {
    EXPECT_FALSE(matches(rx, any, other)) << other;
  }
  const RegexId utf8_any = any_encoded_char(rx, CharEncoding::kUtf8);
  EXPECT_TRUE(matches(rx, utf8_any, "\n"));
  EXPECT_FALSE(matches(rx, utf8_any, "\\n"));
}

void expect_error(std::string_view pattern, ErrorCode code, std::string_view offset_text) {
  RegexBuilder rx;
  Result<RegexId> r = compile_ecma_regex(rx, pattern, CharEncoding::kUtf8, true);
  ASSERT_FALSE(r.ok()) << pattern;
  EXPECT_EQ(r.status().code(), code) << pattern << ": " << r.status().to_string();
  EXPECT_NE(r.status().message().find(offset_text), std::string::npos)
      << pattern << ": " << r.status().message();
}

TEST(EcmaRegex, UnsupportedConstructs) {
  const ErrorCode u = ErrorCode::kUnsupportedSchema;
  expect_error("a(?=b)", u, "byte 1");
  expect_error("(?!x)", u, "byte 0");
  expect_error("x(?<=a)b", u, "byte 1");
  expect_error("(?<!a)b", u, "byte 0");
  expect_error("\\bfoo", u, "byte 0");
  expect_error("a\\B", u, "byte 1");
  expect_error("(a)\\1", u, "byte 3");
  expect_error("(?<n>a)\\k<n>", u, "byte 7");
  expect_error("\\p{L}", u, "byte 0");
  expect_error("a^b", u, "byte 1");
  expect_error("a$b", u, "byte 1");
  expect_error("(^a)", u, "byte 1");
  expect_error("(a$)", u, "byte 2");
  expect_error("(?i)a", u, "byte 0");
  expect_error("\\01", u, "byte 0");
}

TEST(EcmaRegex, MalformedPatterns) {
  const ErrorCode e = ErrorCode::kInvalidGrammar;
  expect_error("(ab", e, "byte 0");
  expect_error("ab)", e, "byte 2");
  expect_error("[abc", e, "byte 0");
  expect_error("a**", e, "byte 2");
  expect_error("*a", e, "byte 0");
  expect_error("a|+", e, "byte 2");
  expect_error("a{3,2}", e, "byte 1");
  expect_error("ab\\", e, "byte 2");
  expect_error("\\xZZ", e, "byte 0");
  expect_error("\\u12", e, "byte 0");
  expect_error("\\u{110000}", e, "byte 0");
  expect_error("[z-a]", e, "byte 2");
  expect_error("\\e", e, "byte 0");
  expect_error("a\xff", e, "byte 1");
  expect_error("(?<>a)", e, "byte 0");
  expect_error("(?", e, "byte 0");
  expect_error("\\c1", e, "byte 0");
}

TEST(EcmaRegex, TooComplex) {
  const ErrorCode c = ErrorCode::kSchemaTooComplex;
  expect_error("a{10001}", c, "byte 1");
  expect_error("a{1,20000}", c, "byte 1");
  expect_error("a{99999999999999999999}", c, "byte 1");
  expect_error(std::string(300, '(') + std::string(300, ')'), c, "byte 200");
  // At the bound it compiles, and stays compact.
  Compiled ok = compile("^a{10000}$");
  EXPECT_LT(ok.rx.term_count(), 100u);
  EXPECT_TRUE(ok.matches(std::string(10000, 'a')));
  EXPECT_FALSE(ok.matches(std::string(9999, 'a')));
}

// ---- formats: cases from the JSON Schema Test Suite (draft 2020-12, optional/format) ----

void expect_format(std::string_view name, const std::vector<std::string>& valid,
                   const std::vector<std::string>& invalid) {
  RegexBuilder rx;
  Result<RegexId> r = format_regex(rx, name, CharEncoding::kUtf8);
  ASSERT_TRUE(r.ok()) << name << ": " << r.status().to_string();
  for (const std::string& s : valid) EXPECT_TRUE(matches(rx, *r, s)) << name << ": " << s;
  for (const std::string& s : invalid) EXPECT_FALSE(matches(rx, *r, s)) << name << ": " << s;
}

TEST(EcmaRegex, FormatDate) {
  expect_format("date",
                {"1963-06-19", "2020-01-31", "2021-02-28", "2020-02-29", "2020-04-30", "2020-12-31",
                 "0400-02-29", "0001-01-01", "1582-10-10", "2000-02-29"},
                {"2020-01-32",  "2020-02-30",  "2020-04-31",  "2020-06-31",  "2020-09-31",
                 "2020-11-31",  "06/19/1963",  "2013-350",    "1998-1-20",   "1998-01-1",
                 "1998-13-01",  "2021-02-29",  "0100-02-29",  "2100-02-29",  "1963-06-1\u09ea",
                 " 2024-01-15", "2024-01-15 ", "2024-00-15",  "2024-01-00",  "",
                 "20230328",    "2023-W01",    "12020-01-01", "+2020-01-01", "2020-01-01T00:00:00Z",
                 "2020-01-0:"});
}

TEST(EcmaRegex, FormatTime) {
  expect_format(
      "time",
      {"08:30:06Z", "23:59:60Z", "23:59:60+00:00", "01:29:60+01:30", "23:29:60+23:30",
       "15:59:60-08:00", "00:29:60-23:30", "23:20:50.52Z", "08:30:06.283185Z", "08:30:06+00:20",
       "08:30:06-08:00", "12:34:56-00:00", "08:30:06z", "00:59:60+01:00", "23:59:60.5-00:00"},
      {"008:030:006Z",
       "8:3:6Z",
       "22:59:60Z",
       "23:58:60Z",
       "22:59:60+00:00",
       "23:58:60+00:00",
       "23:59:60+01:00",
       "23:59:60+00:30",
       "23:59:60-01:00",
       "23:59:60-00:30",
       "08:30:06-8:000",
       "24:00:00Z",
       "00:60:00Z",
       "00:00:61Z",
       "01:02:03+24:00",
       "01:02:03+00:60",
       "01:02:03Z+00:30",
       "08:30:06 PST",
       "01:01:01,1111",
       "12:00:00",
       "12:00:00.52",
       "1\u09e8:00:00Z",
       "08:30:06#00:20",
       "ab:cd:ef",
       "2020-11-28T23:55:45Z",
       "08:30:06.Z"});
}

TEST(EcmaRegex, FormatDateTime) {
  expect_format(
      "date-time",
      {"1963-06-19T08:30:06.283185Z", "1963-06-19T08:30:06Z", "1937-01-01T12:00:27.87+00:20",
       "1990-12-31T15:59:50.123-08:00", "1998-12-31T23:59:60Z", "1998-12-31T15:59:60.123-08:00",
       "1963-06-19t08:30:06.283185z", "1985-04-12T00:59:59.999999999999999Z"},
      {"1998-12-31T23:59:61Z", "1998-12-31T23:58:60Z", "1998-12-31T22:59:60Z",
       "1990-02-31T15:59:59.123-08:00", "1990-12-31T15:59:59-24:00",
       "1963-06-19T08:30:06.28123+01:00Z", "1990-12-31T24:00:00Z", "1990-12-31T15:60:00Z",
       "1990-12-31T10:00:00+10:60", "06/19/1963 08:30:06 PST", "2013-350T01:01:01",
       "1963-6-19T08:30:06.283185Z", "+11963-06-19T08:30:06Z", "1985-04-12T23:20:50+01",
       "2016-12-31T24:59:60+01:00", "1985-04-12T23:20:50Z\n", "1963-06-19 08:30:06Z"});
}

TEST(EcmaRegex, FormatDuration) {
  expect_format("duration",
                {"P4DT12H30M5S", "P4Y", "PT0S", "P0D", "P1M", "PT1M", "PT36H", "P1DT12H", "P2W",
                 "P1Y2M3DT4H5M6S", "P1Y2M3D", "PT1H2M3S", "P1M2D", "PT1H30M",
                 "P10Y10M10DT10H10M10S", "P1Y2M", "PT1H2M"},
                {"PT1D", "4DT12H30M5S", "P", "P1YT", "PT", "P2D1Y", "P1D2H", "P2S", "P1Y2W",
                 "P\u09e8Y", "P1", "PT0.5S", " P1D", "P1D ", "", "P1Y2D", "PT1H2S"});
}

TEST(EcmaRegex, FormatEmail) {
  expect_format("email",
                {"joe.bloggs@example.com", "te~st@example.com", "~test@example.com",
                 "test~@example.com", "\"joe bloggs\"@example.com", "\"joe..bloggs\"@example.com",
                 "\"joe@bloggs\"@example.com", "joe.bloggs@[127.0.0.1]", "joe.bloggs@[IPv6:::1]",
                 "te.s.t@example.com", "\"a\\\"b\"@example.com"},
                {"2962", ".test@example.com", "test.@example.com", "te..st@example.com",
                 "joe.bloggs@invalid=domain.com", "joe.bloggs@[127.0.0.300]",
                 "user1@oceania.org, user2@oceania.org",
                 "\"Winston Smith\" <winston.smith@recdep.minitrue> (Records Department)",
                 "@example.com", "joe.bloggs@", "joe bloggs@example.com"});
  // The quotes of a quoted local part are escaped inside a JSON string.
  RegexBuilder rx;
  Result<RegexId> r = format_regex(rx, "email", CharEncoding::kJsonString);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(matches(rx, *r, "\\\"joe bloggs\\\"@example.com"));
  EXPECT_FALSE(matches(rx, *r, "\"joe bloggs\"@example.com"));
}

TEST(EcmaRegex, FormatUuid) {
  expect_format(
      "uuid",
      {"2EB8AA08-AA98-11EA-B4AA-73B441D16380", "2eb8aa08-aa98-11ea-b4aa-73b441d16380",
       "2eb8aa08-AA98-11ea-B4Aa-73B441D16380", "00000000-0000-0000-0000-000000000000",
       "99c17cbb-656f-f64a-940f-1a4568f03487"},
      {"2eb8aa08-aa98-11ea-b4aa-73b441d1638", "2eb8aa08-aa98-11ea-73b441d16380",
       "2eb8aa08-aa98-11ea-b4ga-73b441d16380", "2eb8aa08aa9811eab4aa73b441d16380",
       "2eb8aa0-8aa98-11e-ab4aa7-3b441d16380", "urn:uuid:2eb8aa08-aa98-11ea-b4aa-73b441d16380",
       "2eb8aa08-aa98-11ea-b4aa-73b441d16380-", "2eb8aa08-aa98-11ea-b4aa-73b441d16380\n"});
}

TEST(EcmaRegex, FormatUri) {
  expect_format("uri",
                {"http://foo.bar/?baz=qux#quux", "http://foo.com/blah_(wikipedia)_blah#cite-1",
                 "http://foo.bar/?q=Test%20URL-encoded%20stuff", "http://xn--nw2a.xn--j6w193g/",
                 "http://-.~_!$&'()*+,;=:%40:80%2f::::::@example.com", "http://223.255.255.254",
                 "ftp://ftp.is.co.za/rfc/rfc1808.txt", "ldap://[2001:db8::7]/c=GB?objectClass?one",
                 "mailto:John.Doe@example.com", "news:comp.infosystems.www.servers.unix",
                 "tel:+1-816-555-1212", "urn:oasis:names:specification:docbook:dtd:xml:4.1.2",
                 "http://087.10.0.1/", "http://999.999.999.999/"},
                {"//foo.bar/?baz=qux#quux",
                 "/abc",
                 "\\\\WINDOWS\\fileshare",
                 "abc",
                 "http:// shouldfail.com",
                 ":// should fail",
                 "bar,baz:foo",
                 "https://[@example.org/test.txt",
                 "https://example.org/foobar\u00ae.txt",
                 "https://example.org/foobar\\.txt",
                 "https://example.org/foobar\".txt",
                 "https://example.org/foobar<>.txt",
                 "https://example.org/foobar{}.txt",
                 "https://example.org/foobar^.txt",
                 "https://example.org/foobar`.txt",
                 "https://example.org/foo bar.txt",
                 "https://example.org/foobar|.txt",
                 "http://example.com/%6G",
                 "http://example.com/%A",
                 "http://example.com/%",
                 "1http://example.com",
                 "ht_tp://example.com",
                 "http://example.com:abc/path",
                 "http://[::ffff:01.2.3.4]",
                 "http:/[::1]"});
  expect_format("uri-reference",
                {"http://foo.bar/?baz=qux#quux", "//foo.bar/?baz=qux#quux", "/abc", "abc",
                 "#fragment", "", "../x"},
                {"\\\\WINDOWS\\fileshare", "#frag#ment", "a b"});
}

TEST(EcmaRegex, FormatIpv4) {
  expect_format("ipv4", {"192.168.0.1", "0.0.0.0", "255.255.255.255", "200.0.0.0", "10.20.30.40"},
                {"127.0.0.0.1",
                 "256.256.256.256",
                 "127.0",
                 "127.1",
                 "127.0.1",
                 "0x7f000001",
                 "2130706433",
                 "1\u09e87.0.0.1",
                 "192.168.1.0/24",
                 " 192.168.0.1",
                 "192.168.0.1\n",
                 "087.10.0.1",
                 "192.168..1",
                 ".192.168.0.1",
                 "192.168.0.1.",
                 "",
                 "+1.2.3.4",
                 "192.168.0.1:80",
                 "::ffff:192.168.0.1",
                 "192.168.0.256"});
}

TEST(EcmaRegex, FormatIpv6) {
  expect_format("ipv6",
                {"::1", "::abef", "::", "::42:ff:1", "d6::", "1:d6::42", "1::d6:192.168.0.1",
                 "1:2::192.168.0.1", "::ffff:192.168.0.1", "1:2:3:4:5:6:7:8",
                 "1000:1000:1000:1000:1000:1000:255.255.255.255"},
                {"12345::",
                 "::abcef",
                 "1:1:1:1:1:1:1:1:1:1:1:1:1:1:1:1",
                 "::laptop",
                 ":2:3:4:5:6:7:8",
                 "1:2:3:4:5:6:7:",
                 ":2:3:4::8",
                 "1::d6::42",
                 "1::2:192.168.256.1",
                 "1::2:192.168.ff.1",
                 "1:2:3:4:5:::8",
                 "1:2:3:4:5:6:7",
                 "1",
                 "127.0.0.1",
                 "1:2:3:4:1.2.3",
                 "  ::1",
                 "::1  ",
                 "fe80::/64",
                 "fe80::a%eth1",
                 "100:100:100:100:100:100:255.255.255.255.255",
                 "100:100:100:100:100:100:100:255.255.255.255",
                 "[::1]",
                 "::ffff:192.168.0.01"});
}

TEST(EcmaRegex, FormatHostname) {
  const std::string label63 = "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk";
  expect_format("hostname",
                {"www.example.com", "hostname", "h0stn4me", "1host", "hostnam3", "host-name",
                 label63 + ".com", "a--b.com", "xn--9n2bp8q.xn--9t4b11yi5a"},
                {"", ".", ".example", "example.", "example\uff0ecom", "-hostname", "hostname-",
                 "host_name", label63 + "l.com", "example.com\n", "\u212aelvin.example.com",
                 label63 + "." + label63 + "." + label63 + "." + label63 + ".com"});
  // 253 bytes is the most a name may have.
  const std::string name = label63 + "." + label63 + "." + label63 + "." + std::string(61, 'a');
  ASSERT_EQ(name.size(), 253u);
  expect_format("hostname", {name}, {name + "a"});
}

TEST(EcmaRegex, FormatJsonPointer) {
  expect_format("json-pointer", {"", "/foo/0", "/a~1b", "/m~0n", "/ ", "/é"}, {"foo", "/~2", "/~"});
  expect_format("relative-json-pointer", {"0", "1/foo", "0#", "10/a~1b"}, {"01", "-1", "/foo"});
}

TEST(EcmaRegex, UnknownFormat) {
  RegexBuilder rx;
  Result<RegexId> r = format_regex(rx, "idn-hostname", CharEncoding::kUtf8);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kUnsupportedSchema);
}

TEST(EcmaRegex, FormatsCompileQuickly) {
  for (std::string_view name : {"date-time", "email", "uri", "ipv6", "hostname"}) {
    RegexBuilder rx;
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(format_regex(rx, name, CharEncoding::kJsonString).ok());
    const auto elapsed = std::chrono::steady_clock::now() - start;
    EXPECT_LT(elapsed, std::chrono::milliseconds(100)) << name;  // generous: sanitizers are on
    EXPECT_LT(rx.term_count(), 5000u) << name;
  }
}

}  // namespace
}  // namespace synapse::constrain
