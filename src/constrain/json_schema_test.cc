// SPDX-License-Identifier: Apache-2.0
#include "constrain/json_schema.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "constrain/json_schema_number.h"
#include "constrain/matcher.h"
#include "tests/support/test_support.h"

namespace synapse::constrain {
namespace {

using Json = nlohmann::ordered_json;

std::shared_ptr<const Grammar> compile_ok(const Json& schema,
                                          const JsonSchemaOptions& options = {}) {
  auto g = compile_json_schema(schema, options);
  EXPECT_TRUE(g.ok()) << schema.dump() << ": " << g.status().to_string();
  if (!g.ok()) return nullptr;
  return std::make_shared<const Grammar>(std::move(g).value());
}

// Every text in `good` is accepted, every one in `bad` refused.
void expect_language(const Json& schema, const std::vector<std::string>& good,
                     const std::vector<std::string>& bad) {
  const auto g = compile_ok(schema);
  if (!g) return;
  for (const std::string& text : good) {
    EXPECT_TRUE(grammar_accepts(g, text)) << schema.dump() << " should accept " << text;
  }
  for (const std::string& text : bad) {
    EXPECT_FALSE(grammar_accepts(g, text)) << schema.dump() << " should refuse " << text;
  }
}

std::string dump(const char* json_text) { return Json::parse(json_text).dump(); }

void expect_refused(const Json& schema, ErrorCode code, const std::string& field) {
  auto g = compile_json_schema(schema);
  ASSERT_FALSE(g.ok()) << schema.dump() << " compiled";
  EXPECT_EQ(g.status().code(), code) << g.status().to_string();
  EXPECT_EQ(g.status().where().field, field) << g.status().to_string();
}

TEST(JsonSchema, EmptySchemaIsAnyValue) {
  expect_language(
      Json::object(),
      {"null", "true", "0", "-1.5e+10", "\"x\"", "[]", "{}", dump(R"({"a":[1,{"b":null}]})")},
      {"", "nul", "[1,]", "{\"a\"}", "01", " 1", "{\"a\":1,}"});
  expect_language(Json(true), {"1", "{}"}, {"x"});
}

TEST(JsonSchema, FalseSchemaIsRefused) {
  expect_refused(Json(false), ErrorCode::kUnsupportedSchema, "/");
}

TEST(JsonSchema, Types) {
  expect_language(Json::parse(R"({"type":"null"})"), {"null"}, {"0", "\"null\""});
  expect_language(Json::parse(R"({"type":"boolean"})"), {"true", "false"}, {"null", "1"});
  expect_language(Json::parse(R"({"type":"integer"})"),
                  {"0", "-7", "123456789012345678901", "-1.2345678910111214e+52", "1e+16"},
                  {"1.5", "01", "-", "1e5", "1e+15", "1.5e-20", "\"1\""});
  expect_language(Json::parse(R"({"type":"number"})"),
                  {"0", "-0.5", "1.0", "1e-05", "1.5E+300", "12"}, {".5", "1.", "+1", "1e"});
  expect_language(Json::parse(R"({"type":"string"})"),
                  {"\"\"", "\"a b\"", "\"\\\"\"", "\"\\\\\"", "\"\\n\"", "\"\\u0001\"", "\"é\""},
                  {"\"a", "\"\\x\"", "\"\n\"", "a"});
  expect_language(Json::parse(R"({"type":["string","null"]})"), {"null", "\"a\""}, {"1"});
  expect_language(Json::parse(R"({"type":"array"})"), {"[]", "[1,\"a\",[null]]"}, {"{}", "[1,]"});
  expect_language(Json::parse(R"({"type":"object"})"), {"{}", "{\"a\":1}"}, {"[]", "{a:1}"});
  expect_language(Json::parse(R"({"type":"string","nullable":true})"), {"null", "\"a\""}, {"1"});
}

TEST(JsonSchema, StringLengthPatternFormat) {
  expect_language(Json::parse(R"({"type":"string","minLength":2,"maxLength":3})"),
                  {"\"ab\"", "\"abc\"", "\"éé\"", "\"\\n\\t\""}, {"\"a\"", "\"abcd\""});
  expect_language(Json::parse(R"({"type":"string","pattern":"^[a-z]+$"})"), {"\"abc\""},
                  {"\"\"", "\"aB\"", "\"1\""});
  // Unanchored patterns match anywhere.
  expect_language(Json::parse(R"({"type":"string","pattern":"\\d"})"), {"\"a1b\"", "\"7\""},
                  {"\"ab\""});
  expect_language(Json::parse(R"({"type":"string","format":"date"})"), {"\"2024-02-29\""},
                  {"\"2024-2-29\"", "\"x\""});
  expect_refused(Json::parse(R"({"type":"string","format":"no-such-format"})"),
                 ErrorCode::kUnsupportedSchema, "/format");
  // A format on a non-string type constrains nothing.
  expect_language(Json::parse(R"({"type":"integer","format":"int32"})"), {"5"}, {"\"5\""});
}

TEST(JsonSchema, IntegerRanges) {
  expect_language(Json::parse(R"({"type":"integer","minimum":-12,"maximum":105})"),
                  {"-12", "-9", "-1", "0", "9", "10", "99", "100", "105"},
                  {"-13", "-100", "106", "110", "1000", "-0.5"});
  expect_language(Json::parse(R"({"type":"integer","exclusiveMinimum":0})"),
                  {"1", "10", "999999999999"}, {"0", "-1", "-0"});
  // Draft-04 boolean form.
  expect_language(
      Json::parse(
          R"({"type":"integer","minimum":5,"exclusiveMinimum":true,"maximum":8,"exclusiveMaximum":true})"),
      {"6", "7"}, {"5", "8", "60"});
  expect_language(Json::parse(R"({"type":"integer","minimum":1.5,"maximum":3.5})"), {"2", "3"},
                  {"1", "4", "2.5"});
  expect_refused(Json::parse(R"({"type":"integer","minimum":3,"maximum":2})"),
                 ErrorCode::kUnsupportedSchema, "/");
}

TEST(JsonSchema, NumberRanges) {
  expect_language(Json::parse(R"({"type":"number","minimum":0})"),
                  {"0", "0.0", "-0.0", "1.5", "1e+20", "1e-05", "123.456"},
                  {"-1", "-0.1", "-1e-05"});
  expect_language(Json::parse(R"({"type":"number","exclusiveMinimum":0,"maximum":1})"),
                  {"0.5", "1", "1.0", "0.001", "1e-07"}, {"0", "0.0", "1.01", "2", "1e+01"});
  expect_language(Json::parse(R"({"type":"number","minimum":-2.5,"maximum":0.25})"),
                  {"-2.5", "-2.4999", "-1", "0", "0.25", "0.2", "-2.5e-10"},
                  {"-2.51", "-3", "0.26", "0.250001", "1"});
  expect_language(Json::parse(R"({"type":"number","minimum":1000,"maximum":1e+20})"),
                  {"1000", "1000.5", "1e+03", "1.5e+19", "1e+20", "99999999999999999999"},
                  {"999.99", "9.99e+02", "1.0001e+20", "1e+21", "100000000000000000001"});
  // The bound is the decimal written, not its binary double.
  expect_language(Json::parse(R"({"type":"number","maximum":0.1})"), {"0.1", "0.09", "-5"},
                  {"0.10000000000000001", "0.11"});
}

TEST(JsonSchema, NumberRegexesAgreeWithComparison) {
  // The range regexes against compare_decimal, over a grid of spellings and bounds.
  using namespace json_schema_internal;
  const std::vector<std::string> values = {
      "0",     "-0",    "0.0",   "-0.0",    "1",       "-1",    "9",      "10",   "11",
      "99",    "100",   "101",   "0.5",     "-0.5",    "0.05",  "0.051",  "2.5",  "-2.5",
      "12.34", "1e+00", "1e-05", "-1e-05",  "2.5e+01", "1e+20", "-1e+20", "7.2",  "19.99",
      "20",    "20.0",  "1e+01", "1.5E+01", "99.5",    "0.001", "123456", "-123", "5e-324"};
  const std::vector<std::string> bounds = {"0",     "1",     "-1",    "0.05", "2.5", "-2.5", "20",
                                           "12.34", "1e+20", "1e-05", "99.5", "100", "-123"};
  RegexBuilder rx;
  for (const std::string& lo : bounds) {
    for (const std::string& hi : bounds) {
      for (int flags = 0; flags < 32; ++flags) {
        NumberRange r;
        r.integer = (flags & 1) != 0;
        r.non_integer = (flags & 16) != 0;
        r.lower_exclusive = (flags & 2) != 0;
        r.upper_exclusive = (flags & 4) != 0;
        if ((flags & 8) == 0) r.lower = parse_decimal(lo);
        r.upper = parse_decimal(hi);
        const RegexId re = number_range_regex(rx, r);
        EXPECT_EQ(r.empty(), rx.is_empty_language(re))
            << "[" << lo << ", " << hi << "] flags " << flags;
        for (const std::string& v : values) {
          RegexId s = re;
          for (char c : v) s = rx.derive(s, static_cast<uint8_t>(c));
          // Integers are spelled plainly (or, unbounded on that side, from 1e16 up with an
          // exponent); non-integers never with a positive exponent.
          const size_t e = v.find_first_of("eE");
          const bool positive_exponent = e != std::string::npos && v[e + 1] != '-';
          if (r.integer && positive_exponent) continue;
          const bool want = r.contains(*parse_decimal(v)) &&
                            (!r.integer || (v.find_first_of(".eE") == std::string::npos)) &&
                            (!r.non_integer || !positive_exponent);
          EXPECT_EQ(rx.nullable(s), want)
              << v << " in [" << lo << ", " << hi << "] flags " << flags;
        }
      }
    }
  }
}

TEST(JsonSchema, EnumAndConst) {
  expect_language(Json::parse(R"({"enum":["a",1,null,[1,"x"],{"k":true}]})"),
                  {"\"a\"", "1", "1.0", "null", "[1,\"x\"]", "{\"k\":true}"},
                  {"\"b\"", "2", "[1]", "{\"k\":false}", "[1,\"x\",2]", "{}"});
  expect_language(Json::parse(R"({"const":{"a":[1,2]}})"), {"{\"a\":[1,2]}"},
                  {"{\"a\":[1]}", "{\"a\":[1,2],\"b\":1}", "{}"});
  // Type and enum together keep only the values of that type.
  expect_language(Json::parse(R"({"type":"string","enum":["a",1]})"), {"\"a\""}, {"1"});
  expect_language(Json::parse(R"({"type":"integer","enum":[1,2.5,3.0]})"), {"1", "3", "3.0"},
                  {"2.5"});
  // Scalars of different lengths stay distinct tokens despite greedy lexing.
  expect_language(Json::parse(R"({"type":"array","items":{"enum":[1,12,"a","ab"]}})"),
                  {"[1,12]", "[12,1]", "[\"a\",\"ab\"]"}, {"[121]", "[\"abc\"]"});
}

TEST(JsonSchema, PropertiesInEveryCombination) {
  const Json schema = Json::parse(R"({"type":"object","properties":{
      "a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"boolean"},"d":{"type":"null"}},
      "required":["b"],"additionalProperties":false})");
  const auto g = compile_ok(schema);
  ASSERT_TRUE(g);
  const std::vector<std::pair<std::string, std::string>> props = {
      {"a", "1"}, {"b", "\"x\""}, {"c", "true"}, {"d", "null"}};
  for (int mask = 0; mask < 16; ++mask) {
    std::string text = "{";
    bool first = true;
    for (size_t i = 0; i < 4; ++i) {
      if (((mask >> i) & 1) == 0) continue;
      if (!first) text += ",";
      first = false;
      text += "\"" + props[i].first + "\":" + props[i].second;
    }
    text += "}";
    EXPECT_EQ(grammar_accepts(g, text), (mask & 2) != 0) << text;
  }
  // Out of definition order, duplicated, or additional: refused.
  for (const char* text : {R"({"b":"x","a":1})", R"({"b":"x","b":"y"})", R"({"b":"x","e":1})",
                           R"({"b":"x",})", R"({,"b":"x"})", R"({"b":1})"}) {
    EXPECT_FALSE(grammar_accepts(g, text)) << text;
  }
}

// Every order of the present keys is decided the same way: required ones present, none twice,
// additional ones anywhere, and the count bounds kept.
TEST(JsonSchema, PropertiesInAnyOrderWhenAsked) {
  const JsonSchemaOptions any{.property_order = JsonSchemaOptions::PropertyOrder::kAny};
  const auto g = compile_ok(Json::parse(R"({"type":"object","properties":{
      "a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"boolean"}},
      "required":["b","c"],"additionalProperties":{"type":"null"},"maxProperties":4})"),
                            any);
  ASSERT_TRUE(g);
  const std::map<std::string, std::string> values = {
      {"a", "1"}, {"b", "\"x\""}, {"c", "true"}, {"x", "null"}, {"y", "null"}};
  for (int mask = 0; mask < 32; ++mask) {
    std::vector<std::string> present;  // sorted, the first permutation
    size_t bit = 0;
    for (const auto& [key, value] : values) {
      if ((mask >> bit++) & 1) present.push_back(key);
    }
    const bool want = (mask & 6) == 6 && present.size() <= 4;
    do {
      std::string text = "{";
      for (size_t i = 0; i < present.size(); ++i) {
        text += (i > 0 ? ",\"" : "\"") + present[i] + "\":" + values.at(present[i]);
      }
      text += "}";
      EXPECT_EQ(grammar_accepts(g, text), want) << text;
    } while (std::next_permutation(present.begin(), present.end()));
  }
  for (const char* text : {R"({"b":"x","c":true,"b":"y"})", R"({"c":true,"b":"x","a":1,"a":2})",
                           R"({"c":true,"b":"x",})", R"({,"c":true,"b":"x"})",
                           R"({"c":true,"b":1})", R"({"c":true,"b":"x","x":1})"}) {
    EXPECT_FALSE(grammar_accepts(g, text)) << text;
  }
  // An empty object, a minimum, and the fallback for required keys that only patterns name.
  const auto small = compile_ok(Json::parse(R"({"properties":{"a":{},"b":{}},"minProperties":1,
      "additionalProperties":false})"),
                                any);
  ASSERT_TRUE(small);
  EXPECT_FALSE(grammar_accepts(small, "{}"));
  EXPECT_TRUE(grammar_accepts(small, R"({"b":1,"a":2})"));
  EXPECT_TRUE(grammar_accepts(small, R"({"b":1})"));
  EXPECT_TRUE(grammar_accepts(compile_ok(Json::parse(R"({"properties":{"a":{}}})"), any), "{}"));
}

TEST(JsonSchema, AdditionalProperties) {
  const Json schema = Json::parse(R"({"type":"object","properties":{"a":{"type":"integer"}},
      "additionalProperties":{"type":"string"}})");
  expect_language(schema,
                  {"{}", R"({"a":1})", R"({"a":1,"b":"x"})", R"({"b":"x","c":"y"})",
                   R"({"ab":"x"})", R"({"":"x"})"},
                  {R"({"a":"x"})", R"({"b":1})", R"({"b":"x","a":1})", R"({"a":1,"a":"x"})"});
  // Additional keys never equal a declared one, so the declared schema cannot be bypassed.
  expect_language(Json::parse(R"({"properties":{"a":{"type":"integer"}}})"),
                  {R"({"a":1,"b":"x"})", R"({"b":[]})"}, {R"({"a":1,"a":"x"})", R"({"a":"x"})"});
  // Required keys without a declaration take the additionalProperties schema, in any order
  // among the additional keys.
  expect_language(Json::parse(R"({"required":["x"],"additionalProperties":{"type":"integer"}})"),
                  {R"({"x":1})", R"({"x":1,"y":2})", R"({"y":2,"x":1})"},
                  {"{}", R"({"x":"s"})", R"({"y":2})"});
  expect_language(Json::parse(R"({"properties":{"a":{}},"required":["x","y"]})"),
                  {R"({"a":1,"y":1,"x":2})", R"({"x":1,"z":3,"y":2})"},
                  {R"({"x":1})", R"({"y":1,"a":1,"x":2})"});
}

TEST(JsonSchema, PatternPropertiesAndPropertyNames) {
  expect_language(Json::parse(R"({"type":"object","patternProperties":{"^x-":{"type":"integer"}},
      "additionalProperties":false})"),
                  {"{}", R"({"x-a":1})", R"({"x-a":1,"x-b":2})"}, {R"({"x-a":"s"})", R"({"y":1})"});
  expect_language(Json::parse(R"({"type":"object","properties":{"x-a":{"minimum":5}},
      "patternProperties":{"^x-":{"type":"integer"}}})"),
                  {R"({"x-a":5})", R"({"x-b":1,"z":"s"})"}, {R"({"x-a":4})", R"({"x-a":5.5})"});
  expect_language(Json::parse(R"({"type":"object","propertyNames":{"maxLength":2}})"),
                  {"{}", R"({"ab":1})"}, {R"({"abc":1})"});
}

TEST(JsonSchema, MinMaxProperties) {
  expect_language(Json::parse(R"({"type":"object","minProperties":1,"maxProperties":2})"),
                  {R"({"a":1})", R"({"a":1,"b":2})"}, {"{}", R"({"a":1,"b":2,"c":3})"});
  expect_language(Json::parse(R"({"type":"object","properties":{"a":{},"b":{}},
      "minProperties":1,"additionalProperties":false})"),
                  {R"({"a":1})", R"({"b":1})", R"({"a":1,"b":2})"}, {"{}"});
}

TEST(JsonSchema, Arrays) {
  expect_language(
      Json::parse(R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})"),
      {"[1]", "[1,2,3]"}, {"[]", "[1,2,3,4]", "[\"a\"]", "[1,]"});
  expect_language(Json::parse(R"({"type":"array","items":{"type":"integer"},"minItems":2})"),
                  {"[1,2]", "[1,2,3,4,5]"}, {"[1]"});
  expect_language(
      Json::parse(R"({"prefixItems":[{"type":"string"},{"type":"integer"}],"items":false})"),
      {"[]", "[\"a\"]", "[\"a\",1]"}, {"[1]", "[\"a\",1,2]"});
  // Draft-07 tuple form.
  expect_language(
      Json::parse(R"({"items":[{"type":"string"}],"additionalItems":{"type":"integer"}})"),
      {"[]", "[\"a\"]", "[\"a\",1,2]"}, {"[1]", "[\"a\",\"b\"]"});
  // additionalItems without a tuple is inert.
  expect_language(Json::parse(R"({"items":{"type":"string"},"additionalItems":false})"),
                  {"[\"a\",\"b\"]"}, {"[1]"});
  expect_language(Json::parse(R"({"type":"array","uniqueItems":true,"maxItems":1})"), {"[]", "[1]"},
                  {"[1,1]"});
  expect_language(Json::parse(R"({"type":"array","contains":{"type":"string"},"maxItems":3})"),
                  {"[\"a\"]", "[1,\"a\"]", "[\"a\",1,2]"},
                  {"[]", "[1]", "[1,2,3]", "[1,2,3,\"a\"]"});
  expect_language(
      Json::parse(R"({"allOf":[{"contains":{"type":"string"}},{"contains":{"minLength":2}}]})"),
      {"[\"ab\"]", "[\"a\",1,\"bb\"]", "[[],\"abc\"]"}, {"[\"a\"]", "[1,2]"});
  // not(items: S) is "some item outside S".
  expect_language(Json::parse(R"({"type":"array","not":{"items":{"type":"integer"}}})"),
                  {"[\"a\"]", "[1,2,null]"}, {"[]", "[1,2]"});
}

TEST(JsonSchema, AnyOfOneOfAllOf) {
  expect_language(Json::parse(R"({"anyOf":[{"type":"string"},{"type":"integer","minimum":3}]})"),
                  {"\"a\"", "3"}, {"2", "null"});
  // Disjoint by type, and by a const discriminator.
  expect_language(Json::parse(R"({"oneOf":[{"type":"string"},{"type":"null"}]})"),
                  {"\"a\"", "null"}, {"1"});
  expect_language(Json::parse(R"({"oneOf":[
      {"type":"object","properties":{"kind":{"const":"a"},"x":{"type":"integer"}},"required":["kind"]},
      {"type":"object","properties":{"kind":{"const":"b"},"y":{"type":"string"}},"required":["kind"]}]})"),
                  {R"({"kind":"a","x":1})", R"({"kind":"b","y":"s"})"},
                  {R"({"kind":"a","x":"s"})", R"({"kind":"c"})"});
  // Overlapping branches are made exclusive with complements: exactly one must match.
  expect_language(Json::parse(R"({"oneOf":[{"type":"integer"},{"minimum":0}]})"),
                  {"-1", "0.5", "1e-05", "\"a\"", "null"}, {"0", "7", "-0", "1.0"});
  expect_language(
      Json::parse(R"({"type":"object","oneOf":[{"required":["a"]},{"required":["b"]}]})"),
      {R"({"a":1})", R"({"b":1})", R"({"a":1,"c":2})"}, {"{}", R"({"a":1,"b":2})"});
  // ...and refused where a complement is not expressible.
  expect_refused(Json::parse(R"({"oneOf":[{"type":"array","uniqueItems":false},
      {"type":"array","items":{"type":"integer"},"prefixItems":[{"type":"string"}]}]})"),
                 ErrorCode::kUnsupportedSchema, "/oneOf/1");
  // Optionally compiled as anyOf, with a note.
  {
    std::vector<std::string> notes;
    JsonSchemaOptions options;
    options.one_of_as_any_of = true;
    options.notes = &notes;
    const auto g = compile_ok(Json::parse(R"({"oneOf":[{"type":"array","uniqueItems":false},
        {"type":"array","items":{"type":"integer"},"prefixItems":[{"type":"string"}]}]})"),
                              options);
    ASSERT_TRUE(g);
    EXPECT_TRUE(grammar_accepts(g, R"(["a",1])"));
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("/oneOf"), std::string::npos) << notes[0];
  }
  expect_language(
      Json::parse(
          R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
      {"properties":{"a":{"minimum":2},"b":{"type":"string"}}}]})"),
      {R"({"a":2})", R"({"a":3,"b":"x"})"}, {R"({"a":1})", "{}", R"({"a":2,"b":1})"});
  // Sibling keywords beside $ref apply in 2020-12.
  expect_language(
      Json::parse(R"({"$defs":{"s":{"type":"string"}},"$ref":"#/$defs/s","maxLength":1})"),
      {"\"a\""}, {"\"ab\"", "1"});
  // ...and are ignored in draft-07.
  expect_language(Json::parse(R"({"$schema":"http://json-schema.org/draft-07/schema#",
      "definitions":{"s":{"type":"string"}},"$ref":"#/definitions/s","maxLength":1})"),
                  {"\"a\"", "\"ab\""}, {"1"});
}

TEST(JsonSchema, Not) {
  expect_language(Json::parse(R"({"not":{"type":"string"}})"), {"1", "null", "{}"}, {"\"a\""});
  expect_language(Json::parse(R"({"type":"string","not":{"enum":["a","b"]}})"),
                  {"\"c\"", "\"ab\"", "\"\""}, {"\"a\"", "\"b\""});
  // Complemented bodies still end at the closing quote when more JSON follows.
  expect_language(Json::parse(R"({"properties":{"s":{"type":"string","not":{"enum":["x"]}},
      "t":{"not":{"type":"string","pattern":"^a"}}}})"),
                  {R"({"s":"Youth League","t":"b"})", R"({"s":"y","t":1})", R"({"s":"a\"b"})"},
                  {R"({"s":"x"})", R"({"t":"abc"})", R"({"s":"a"b"})"});
  expect_language(Json::parse(R"({"type":"object","not":{"required":["a"]}})"),
                  {"{}", R"({"b":1})"}, {R"({"a":1})"});
  expect_language(Json::parse(R"({"type":"integer","not":{"enum":[3]}})"), {"2", "4", "30"}, {"3"});
}

TEST(JsonSchema, Dependencies) {
  expect_language(
      Json::parse(R"({"type":"object","properties":{"a":{},"b":{},"c":{}},
      "dependencies":{"a":["b"],"c":{"properties":{"a":{"type":"string"}}}}})"),
      {"{}", R"({"b":1})", R"({"a":1,"b":2})", R"({"a":"x","b":2,"c":3})", R"({"c":3})"},
      {R"({"a":1})", R"({"a":1,"c":3})", R"({"a":1,"b":2,"c":3})"});
  expect_language(Json::parse(R"({"type":"object","required":["a"],
      "dependentRequired":{"a":["b"]}})"),
                  {R"({"a":1,"b":2})", R"({"b":2,"a":1})"}, {R"({"a":1})"});
  expect_language(Json::parse(R"({"dependencies":{"bar":["foo"]}})"),
                  {"{}", R"({"foo":1})", R"({"foo":1,"bar":2})", R"({"bar":2,"foo":1})"},
                  {R"({"bar":2})"});
}

TEST(JsonSchema, IfThenElse) {
  const Json schema = Json::parse(R"({"type":"object","properties":{"kind":{"type":"string"},
      "n":{}},"if":{"properties":{"kind":{"const":"num"}},"required":["kind"]},
      "then":{"properties":{"n":{"type":"number"}}},"else":{"properties":{"n":{"type":"string"}}}})");
  expect_language(schema, {R"({"kind":"num","n":1})", R"({"kind":"str","n":"x"})", R"({"n":"x"})"},
                  {R"({"kind":"num","n":"x"})", R"({"kind":"str","n":1})", R"({"n":1})"});
  // `if` alone asserts nothing.
  expect_language(Json::parse(R"({"if":{"type":"string"}})"), {"1", "\"a\""}, {});
}

TEST(JsonSchema, NotInteger) {
  expect_language(Json::parse(R"({"type":"number","not":{"type":"integer"}})"),
                  {"0.5", "-2.25", "1e-07"}, {"1", "0", "2.0", "1e+20", "\"a\""});
  expect_language(Json::parse(R"({"not":{"type":"integer","minimum":0}})"), {"-1", "0.5", "\"a\""},
                  {"0", "3"});
}

TEST(JsonSchema, NotObject) {
  // not(additionalProperties: false): some undeclared key.
  expect_language(Json::parse(R"({"type":"object","not":{"properties":{"a":{}},
      "additionalProperties":false}})"),
                  {R"({"b":1})", R"({"a":1,"b":2})", R"({"a":1,"a1":2})"}, {"{}", R"({"a":1})"});
  // not(patternProperties): an undeclared key matching the pattern with a bad value.
  expect_language(Json::parse(R"({"type":"object","properties":{"x1":{}},
      "not":{"patternProperties":{"^x":{"type":"integer"}}}})"),
                  {R"({"x2":"s"})", R"({"x1":"s"})", R"({"a":1,"xy":null})"},
                  {"{}", R"({"x2":1})", R"({"a":"s"})"});
  // oneOf with an additionalProperties: false branch is made exclusive.
  expect_language(Json::parse(R"({"oneOf":[{"type":"object","properties":{"a":{}},
      "additionalProperties":false},{"type":"object","required":["a"]}]})"),
                  {"{}", R"({"a":1,"b":2})"}, {R"({"a":1})", R"({"b":2})", "1"});
}

TEST(JsonSchema, RefsAndRecursion) {
  const Json tree = Json::parse(R"({"type":"object","properties":{
      "value":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#"}}},
      "required":["value"],"additionalProperties":false})");
  expect_language(tree,
                  {R"({"value":1})", R"({"value":1,"children":[{"value":2,"children":[]}]})",
                   R"({"value":1,"children":[{"value":2,"children":[{"value":3}]}]})"},
                  {R"({"value":1,"children":[{}]})", R"({"value":1,"children":[1]})"});
  expect_language(Json::parse(R"({"definitions":{"a b":{"type":"integer"},"c/d":{"type":"string"},
      "e~f":{"type":"null"}},"properties":{"x":{"$ref":"#/definitions/a%20b"},
      "y":{"$ref":"#/definitions/c~1d"},"z":{"$ref":"#/definitions/e~0f"},
      "w":{"$ref":"#/properties/x"}}})"),
                  {R"({"x":1,"y":"s","z":null,"w":2})"}, {R"({"x":"s"})", R"({"w":"s"})"});
  // $id-relative and $anchor references inside the document.
  expect_language(Json::parse(R"({"$id":"http://example.com/root.json","$defs":{
      "item":{"$id":"item.json","type":"integer"},"named":{"$anchor":"nm","type":"string"}},
      "properties":{"a":{"$ref":"item.json"},"b":{"$ref":"#nm"},
      "c":{"$ref":"http://example.com/root.json#/$defs/named"}}})"),
                  {R"({"a":1,"b":"s","c":"t"})"}, {R"({"a":"s"})", R"({"b":1})", R"({"c":1})"});
  // A subschema's `id` whose references are written from the document root (common in real
  // schemas): resolved against the root when the strict resolution names nothing.
  expect_language(Json::parse(R"({"definitions":{"a":{"id":"/a","properties":{
      "b":{"$ref":"#/definitions/b"}}},"b":{"type":"integer"}},"$ref":"#/definitions/a"})"),
                  {R"({"b":1})"}, {R"({"b":"x"})"});
  expect_refused(Json::parse(R"({"$ref":"http://example.com/other.json"})"),
                 ErrorCode::kUnsupportedSchema, "/$ref");
  expect_refused(Json::parse(R"({"$ref":"#/definitions/missing"})"), ErrorCode::kInvalidGrammar,
                 "/$ref");
}

TEST(JsonSchema, UnsupportedKeywordsNameTheirPointer) {
  expect_refused(Json::parse(R"({"properties":{"a":{"type":"array","uniqueItems":true}}})"),
                 ErrorCode::kUnsupportedSchema, "/properties/a/uniqueItems");
  // if/then/else needs the complement of `if`.
  expect_refused(Json::parse(R"({"if":{"type":"object","not":{"additionalProperties":false}},
      "then":{"minProperties":1}})"),
                 ErrorCode::kUnsupportedSchema, "/if");
  expect_refused(Json::parse(R"({"type":"array","contains":{"type":"string"},"maxContains":2})"),
                 ErrorCode::kUnsupportedSchema, "/maxContains");
  expect_refused(Json::parse(R"({"type":"integer","multipleOf":3})"), ErrorCode::kUnsupportedSchema,
                 "/multipleOf");
  expect_refused(Json::parse(R"({"items":{"unevaluatedProperties":false}})"),
                 ErrorCode::kUnsupportedSchema, "/items/unevaluatedProperties");
  // Keywords of another type do not apply, so they are not refused.
  expect_language(Json::parse(R"({"type":"string","uniqueItems":true,"multipleOf":3})"), {"\"a\""},
                  {"1"});
  // Annotations and unknown keywords are ignored.
  expect_language(Json::parse(R"({"type":"integer","title":"t","description":"d","default":1,
      "examples":[1],"$comment":"c","deprecated":true,"x-custom":{"type":"string"}})"),
                  {"1"}, {"\"a\""});
}

TEST(JsonSchema, Draft3IsRefused) {
  expect_refused(Json::parse(R"({"$schema":"http://json-schema.org/draft-03/schema#",
      "properties":{"a":{"required":true}}})"),
                 ErrorCode::kUnsupportedSchema, "/$schema");
}

TEST(JsonSchema, MalformedSchemas) {
  expect_refused(Json::parse(R"({"type":"strin"})"), ErrorCode::kInvalidGrammar, "/type");
  expect_refused(Json::parse(R"({"properties":{"a":{"minLength":"x"}}})"),
                 ErrorCode::kInvalidGrammar, "/properties/a/minLength");
  expect_refused(Json::parse(R"({"required":"a"})"), ErrorCode::kInvalidGrammar, "/required");
  expect_refused(Json::parse(R"({"anyOf":[]})"), ErrorCode::kInvalidGrammar, "/anyOf");
  expect_refused(Json::parse("[1]"), ErrorCode::kInvalidGrammar, "/");
}

TEST(JsonSchema, FlexibleWhitespace) {
  JsonSchemaOptions options;
  options.flexible_whitespace = true;
  const auto g =
      compile_ok(Json::parse(R"({"type":"object","properties":{"a":{"type":"array"}}})"), options);
  ASSERT_TRUE(g);
  EXPECT_TRUE(grammar_accepts(g, "{ \"a\" :\n[ 1 , 2 ]\t}"));
  EXPECT_TRUE(grammar_accepts(g, "{\"a\":[1,2]}"));
  EXPECT_FALSE(grammar_accepts(g, "{\"a\":[1 2]}"));
  EXPECT_FALSE(grammar_accepts(g, "{" + std::string(21, ' ') + "}"));
}

TEST(JsonSchema, AnyJsonAndObjectGrammars) {
  auto any = any_json_grammar();
  ASSERT_TRUE(any.ok());
  const auto a = std::make_shared<const Grammar>(std::move(any).value());
  for (const char* t : {"1", "[]", "{\"a\":[true,null]}", "\"s\""})
    EXPECT_TRUE(grammar_accepts(a, t));
  EXPECT_FALSE(grammar_accepts(a, "[1"));
  auto obj = json_object_grammar();
  ASSERT_TRUE(obj.ok());
  const auto o = std::make_shared<const Grammar>(std::move(obj).value());
  EXPECT_TRUE(grammar_accepts(o, "{\"a\":{\"b\":[]}}"));
  EXPECT_FALSE(grammar_accepts(o, "[]"));
  EXPECT_FALSE(grammar_accepts(o, "1"));
}

TEST(JsonSchema, DeepNestingIsRefusedNotACrash) {
  Json schema = Json::object();
  Json value = Json::array();
  // Deeper than kMaxNesting (100); nlohmann copies a value recursively, so not much deeper.
  for (int i = 0; i < 1000; ++i) {
    schema = Json{{"items", schema}};
    value = Json::array({value});
  }
  auto g = compile_json_schema(schema);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kSchemaTooComplex);
  auto c = compile_json_schema(Json{{"const", value}});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), ErrorCode::kSchemaTooComplex);
}

TEST(JsonSchema, BoundsGiveSchemaTooComplex) {
  JsonSchemaOptions options;
  options.max_rules = 50;
  auto g = compile_json_schema(Json::parse(R"({"type":"array","maxItems":1000})"), options);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), ErrorCode::kSchemaTooComplex);
}

// The byte-level half of the MaskBench protocol over some fixture files: every compiled
// schema must refuse every invalid instance (0 invalidation errors); counts are printed.
TEST(JsonSchema, MaskBenchFixturesByteLevel) {
  SYN_REQUIRE_FIXTURE(dir, "schemas/maskbench");
  const char* env = std::getenv("SYNAPSE_MASKBENCH_FILES");
  std::vector<std::string> files;
  if (env != nullptr) {
    std::string list = env;
    for (size_t pos = 0; pos <= list.size();) {
      const size_t comma = std::min(list.find(',', pos), list.size());
      if (comma > pos) files.push_back(list.substr(pos, comma - pos));
      pos = comma + 1;
    }
  } else {
    // Small enough for a sanitizer build; SYNAPSE_MASKBENCH_FILES names others.
    files = {"Github_trivial.jsonl", "Synthesized.jsonl", "MCPspec.jsonl"};
  }
  for (const std::string& file : files) {
    std::ifstream in(dir + "/" + file);
    ASSERT_TRUE(in) << file;
    size_t schemas = 0, compiled = 0, valid = 0, invalid = 0, validation_errors = 0,
           invalidation_errors = 0;
    std::map<std::string, size_t> refusals;
    std::string line;
    while (std::getline(in, line)) {
      const Json record = Json::parse(line);
      ++schemas;
      auto g = compile_json_schema(record.at("schema"));
      if (!g.ok()) {
        std::string reason = std::string(error_code_info(g.status().code()).name) + ": " +
                             g.status().message().substr(0, 40);
        ++refusals[reason];
        continue;
      }
      ++compiled;
      const auto grammar = std::make_shared<const Grammar>(std::move(g).value());
      for (const Json& test : record.at("tests")) {
        const bool want = test.at("valid").get<bool>();
        const bool got = grammar_accepts(grammar, test.at("data").dump());
        (want ? valid : invalid) += 1;
        if (want && !got) {
          ++validation_errors;
          std::printf("  validation error %s: %s\n", record.at("id").get<std::string>().c_str(),
                      test.at("data").dump().substr(0, 160).c_str());
        }
        if (!want && got) {
          ++invalidation_errors;
          ADD_FAILURE() << record.at("id").get<std::string>() << " accepts invalid "
                        << test.at("data").dump().substr(0, 200);
        }
      }
    }
    std::printf(
        "%s: schemas %zu compiled %zu valid %zu invalid %zu validation_errors %zu "
        "invalidation_errors %zu\n",
        file.c_str(), schemas, compiled, valid, invalid, validation_errors, invalidation_errors);
    for (const auto& [reason, count] : refusals) std::printf("  %5zu %s\n", count, reason.c_str());
  }
}

}  // namespace
}  // namespace synapse::constrain
