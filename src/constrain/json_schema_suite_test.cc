// SPDX-License-Identifier: Apache-2.0
// The JSON Schema Test Suite (npm package json-schema-test-suite, installed into build/npm by
// scripts/install-deps.sh) run through the compiler: for every keyword the compiler claims, a
// schema compiles and each case's data, serialised compactly, is accepted exactly when the
// suite says it is valid. Groups whose schema uses a keyword the compiler refuses must fail to
// compile with unsupported_schema — never compile to something that decides wrongly. Objects
// are generated in the schema's property order, so valid data must be accepted in some order of
// its keys and invalid data in none.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "constrain/json_schema.h"
#include "constrain/matcher.h"
#include "tests/support/test_support.h"

namespace synapse::constrain {
namespace {

using Json = nlohmann::ordered_json;

std::string suite_dir() {
  const char* env = std::getenv("SYNAPSE_NPM_DIR");
  const std::string npm = env != nullptr ? env : SYNAPSE_NPM_DIR;
  return npm + "/node_modules/json-schema-test-suite/tests/draft4";
}

// Every compact serialisation of `value` with its objects' keys in any order (the grammar
// generates properties in definition order; the suite's data is in arbitrary order), capped.
std::vector<std::string> serialisations(const Json& value, size_t cap = 512) {
  if (value.is_array()) {
    std::vector<std::string> out = {"["};
    for (size_t i = 0; i < value.size(); ++i) {
      std::vector<std::string> next;
      for (const std::string& head : out) {
        for (const std::string& item : serialisations(value[i], cap)) {
          if (next.size() < cap) next.push_back(head + (i > 0 ? "," : "") + item);
        }
      }
      out = std::move(next);
    }
    for (std::string& s : out) s += "]";
    return out;
  }
  if (!value.is_object()) return {value.dump()};
  std::vector<std::string> keys;
  for (auto it = value.begin(); it != value.end(); ++it) keys.push_back(it.key());
  std::sort(keys.begin(), keys.end());
  std::vector<std::string> out;
  do {
    std::vector<std::string> partial = {"{"};
    for (size_t i = 0; i < keys.size(); ++i) {
      std::vector<std::string> next;
      for (const std::string& head : partial) {
        for (const std::string& v : serialisations(value.at(keys[i]), cap)) {
          if (next.size() < cap)
            next.push_back(head + (i > 0 ? "," : "") + Json(keys[i]).dump() + ":" + v);
        }
      }
      partial = std::move(next);
    }
    for (std::string& s : partial) {
      if (out.size() < cap) out.push_back(s + "}");
    }
  } while (std::next_permutation(keys.begin(), keys.end()) && out.size() < cap);
  return out;
}

struct SuiteTotals {
  size_t groups = 0, compiled = 0, refused = 0, cases = 0;
};

// Runs one file of the suite. `claimed`: the file's keyword is one the compiler enforces, so
// its groups must compile unless another keyword in them is refused.
void run_file(const std::string& name, bool claimed, SuiteTotals& totals) {
  const std::string path = suite_dir() + "/" + name;
  std::ifstream in(path);
  ASSERT_TRUE(in) << "cannot read " << path;
  const Json groups = Json::parse(in);
  for (const Json& group : groups) {
    ++totals.groups;
    const std::string what = name + ": " + group.value("description", "");
    auto grammar = compile_json_schema(group.at("schema"));
    auto any_order = compile_json_schema(
        group.at("schema"),
        JsonSchemaOptions{.property_order = JsonSchemaOptions::PropertyOrder::kAny});
    ASSERT_EQ(grammar.ok(), any_order.ok()) << what << ": the property order changed the verdict";
    if (!grammar.ok()) {
      ++totals.refused;
      EXPECT_EQ(grammar.status().code(), ErrorCode::kUnsupportedSchema)
          << what << ": " << grammar.status().to_string();
      // A claimed keyword's group may only be refused for another keyword it uses, or (refs)
      // for pointing outside the document: remote refs are never fetched.
      const Status status = grammar.status();
      const std::string& message = status.message();
      if (claimed && message.find("remote refs are not fetched") == std::string::npos) {
        EXPECT_EQ(message.find(name.substr(0, name.size() - 5)), std::string::npos)
            << what << " refused for its own keyword: " << grammar.status().to_string();
      }
      continue;
    }
    ++totals.compiled;
    const auto shared = std::make_shared<const Grammar>(std::move(grammar).value());
    const auto shared_any = std::make_shared<const Grammar>(std::move(any_order).value());
    // In definition order, valid data is accepted in some key order and invalid data in none;
    // in any order, every key order is decided as the suite decides the data.
    for (const Json& test : group.at("tests")) {
      ++totals.cases;
      const bool valid = test.at("valid").get<bool>();
      bool accepted = false;
      for (const std::string& text : serialisations(test.at("data"))) {
        accepted = accepted || grammar_accepts(shared, text);
        EXPECT_EQ(grammar_accepts(shared_any, text), valid)
            << what << " / " << test.value("description", "") << " in any order: " << text;
      }
      EXPECT_EQ(accepted, valid) << what << " / " << test.value("description", "") << ": "
                                 << test.at("data").dump();
    }
  }
}

TEST(JsonSchemaSuite, EveryClaimedKeywordDecidesEveryCaseAsTheSuiteDoes) {
  if (!std::filesystem::is_directory(suite_dir())) {
    if (testing::running_in_ci()) FAIL() << "missing under CI=true: " << suite_dir();
    GTEST_SKIP() << "JSON Schema Test Suite not installed: " << suite_dir()
                 << " (./scripts/install-deps.sh)";
  }
  SuiteTotals totals;
  for (const char* file : {"additionalItems.json",
                           "additionalProperties.json",
                           "allOf.json",
                           "anyOf.json",
                           "default.json",
                           "definitions.json",
                           "enum.json",
                           "items.json",
                           "maxItems.json",
                           "maxLength.json",
                           "maxProperties.json",
                           "maximum.json",
                           "minItems.json",
                           "minLength.json",
                           "minProperties.json",
                           "minimum.json",
                           "oneOf.json",
                           "pattern.json",
                           "properties.json",
                           "ref.json",
                           "required.json",
                           "type.json"}) {
    run_file(file, /*claimed=*/true, totals);
  }
  // Keywords the compiler does not enforce: every group must be refused or, where the
  // keyword's value is trivially true, decided right.
  for (const char* file : {"dependencies.json", "multipleOf.json", "not.json",
                           "patternProperties.json", "refRemote.json", "uniqueItems.json"}) {
    run_file(file, /*claimed=*/false, totals);
  }
  std::printf("suite: %zu groups, %zu compiled, %zu refused, %zu cases decided\n", totals.groups,
              totals.compiled, totals.refused, totals.cases);
}

}  // namespace
}  // namespace synapse::constrain
