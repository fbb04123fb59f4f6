// SPDX-License-Identifier: Apache-2.0
// Writes the seed corpus of gbnf_fuzz (built as make_gbnf_seeds) or json_schema_fuzz (built as
// make_json_schema_seeds, with SYNAPSE_SEEDS_JSON_SCHEMA):
//   GBNF: grammars that reach every construct (rules over several lines, groups, literals with
//   every escape, classes, '.', every repetition form, comments, CRLF) and a few near misses.
//   JSON Schema: schemas that use every keyword the compiler knows, plus the first few schemas
//   under 4 KB of each MaskBench file in $SYNAPSE_FIXTURES/schemas/maskbench (default: the
//   fixtures folder beside the checkout; skipped with a note when absent).
//   make_gbnf_seeds DIR | make_json_schema_seeds DIR
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace {

#ifndef SYNAPSE_SEEDS_JSON_SCHEMA
// One seed per line of source: split literals would read as missing commas
// (-Wstring-concatenation).
// clang-format off
constexpr const char* kGrammars[] = {
    "root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\nterm ::= factor ((\"*\" | \"/\") factor)*\nfactor ::= [0-9]+ | \"(\" expr \")\"\n",
    "# JSON\nroot ::= ws value ws\nvalue ::= object | array | string | number | \"true\" | \"false\" | \"null\"\nobject ::= \"{\" ws (\n  member (ws \",\" ws member)*\n  ws\n)? \"}\"\nmember ::= string ws \":\" ws value\narray ::= \"[\" ws (value (ws \",\" ws value)* ws)? \"]\"\nstring ::= \"\\\"\" ([^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}))* \"\\\"\"\nnumber ::= \"-\"? (\"0\" | [1-9] [0-9]*) (\".\" [0-9]+)? ([eE] [-+]? [0-9]+)?\nws ::= [ \\t\\n\\r]*\n",
    "root ::= item (\", \" item){0,9}\nitem ::= [a-z_-]{1,12}\n",
    "root ::= \"\\x41\\u00e9\\U0001F600\\t\\n\\r\\\\\\\"\\[\\]\\-\" [\\x00-\\x1F\\]\\[-] [^\\u0100-\\uFFFF] .\n",
    "root ::= \"日本\" [ぁ-ゟ]+ [^a-zA-Z0-9]? \"😀\"{2}\n",
    "root ::= (\"a\" | \"ab\") \"b\" | \"x\"{3,} | \"y\"{0,5} \"z\"? | (\"p\" \"q\"+)*\n",
    "root ::= line+\nline ::= [^\\n]* \"\\n\"\n",
    "root ::= a |\n  b\na ::= \"a\" a | \"\"\nb ::= b \"b\" | \"c\"\n",
    "root ::= ( ( ( \"deep\" ) ) ){2}  # trailing comment\r\nunused-rule_2 ::= [0-9]\r\n",
    "root ::= move (\" \" move){0,3}\nmove ::= (piece [a-h] [1-8] | castle) [+#]?\npiece ::= [KQRBN]?\ncastle ::= \"O-O\" \"-O\"?\n",
    "root ::= \"a\" \"b\"{1000000} | [0-9]{2,4}\n",
    "root ::= [] | \"x\"\n",
    "root ::= <think> \"x\"\n",
    "root ::= \"unterminated\n",
    "root ::= [z-a]\n",
    "root ::= undefined-rule\n",
    "a ::= \"no root\"\n",
    "root ::= \"x\"{3,2} (\"y\"\n",
};
// clang-format on
#else
// clang-format off
constexpr const char* kSchemas[] = {
    R"({"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 20}, "age": {"type": "integer", "minimum": 0, "maximum": 150}}, "required": ["name"], "additionalProperties": false})",
    R"({"type": "array", "items": {"type": "number", "exclusiveMinimum": -1.5, "exclusiveMaximum": 1e3, "multipleOf": 0.5}, "minItems": 1, "maxItems": 4, "uniqueItems": true})",
    R"({"type": ["string", "null"], "pattern": "^[A-Z][a-z]+( [A-Z][a-z]+)*$"})",
    R"({"enum": ["red", "green", 3, null, true, {"a": [1]}]})",
    R"({"const": {"k": "v", "n": [1, 2.5, -3e-2]}})",
    R"({"type": "string", "format": "date-time"})",
    R"({"anyOf": [{"type": "string", "format": "email"}, {"type": "string", "format": "uuid"}, {"type": "string", "format": "ipv4"}, {"type": "string", "format": "ipv6"}]})",
    R"({"oneOf": [{"type": "integer"}, {"type": "string"}, {"type": "boolean"}]})",
    R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}}, {"required": ["a"]}]})",
    R"({"not": {"type": "string"}})",
    R"({"$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "$ref": "#/$defs/node"})",
    R"({"definitions": {"pos": {"type": "integer", "minimum": 1}}, "type": "array", "items": {"$ref": "#/definitions/pos"}})",
    R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})",
    R"({"type": "array", "items": [{"type": "string"}, {"type": "boolean"}], "additionalItems": {"type": "null"}})",
    R"({"type": "array", "contains": {"const": 7}, "minContains": 1, "maxContains": 2})",
    R"({"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "propertyNames": {"maxLength": 8}, "minProperties": 1, "maxProperties": 3})",
    R"({"type": "object", "additionalProperties": {"type": "integer"}, "dependentRequired": {"a": ["b"]}})",
    R"({"type": "object", "if": {"properties": {"kind": {"const": "a"}}}, "then": {"required": ["x"]}, "else": {"required": ["y"]}})",
    R"({"type": "object", "properties": {"a": {"type": "string"}}, "dependentSchemas": {"a": {"required": ["b"]}}, "unevaluatedProperties": false})",
    R"({"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://example.com/s", "title": "T", "description": "D", "$comment": "c", "examples": [{"a": 1}], "default": {}, "type": "object"})",
    R"({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"when": {"type": "string", "format": "date"}, "at": {"type": "string", "format": "time"}, "site": {"type": "string", "format": "uri"}, "host": {"type": "string", "format": "hostname"}}})",
    R"({"type": "integer", "minimum": -1000000000000, "maximum": 1000000000000, "multipleOf": 7})",
    R"({"type": "number", "minimum": 0.001, "maximum": 0.01})",
    R"({"type": "string", "pattern": "\\d{3}-\\w+|[^\\s]{2,}", "minLength": 3})",
    R"({"type": "string", "enum": ["a\"b", "\\", "\u00e9\u65e5", "\ud83d\ude00", "\n"]})",
    R"({"type": "boolean"})",
    R"({"type": "null"})",
    R"({})",
    R"(true)",
    R"(false)",
    R"({"type": "object", "properties": {"nested": {"type": "object", "properties": {"deeper": {"type": "array", "items": {"type": "object", "required": ["z"], "properties": {"z": {"type": "number"}}}}}}}})",
    R"({"anyOf": [{"$ref": "#"}, {"type": "integer"}], "default": 1})",
    R"({"type": "string", "maxLength": 100000})",
    R"({"type": "array", "minItems": 1000, "items": {"type": "string", "minLength": 50}})",
    R"({"type": "object", "required": ["a", "b", "c", "d", "e", "f", "g", "h"], "additionalProperties": true})",
    R"({"type": "string", "pattern": "(a|b)*abb(a|b){8}"})",
    R"({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["missing"]})",
    R"({"type": "unknown-type"})",
};
// clang-format on

constexpr size_t kMaxFixtureSchemaBytes = 4096;
constexpr int kFixtureSchemasPerFile = 3;

std::string fixtures_dir() {
  const char* dir = std::getenv("SYNAPSE_FIXTURES");
  return dir != nullptr ? dir : SYNAPSE_FIXTURES_DEFAULT;
}

// The first few small schemas of each MaskBench file: real schemas, as a service receives them.
int write_fixture_schemas(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path maskbench = fs::path(fixtures_dir()) / "schemas" / "maskbench";
  std::error_code ec;
  if (!fs::is_directory(maskbench, ec)) {
    std::printf("make_json_schema_seeds: %s not found, fixture schemas skipped\n",
                maskbench.c_str());
    return 0;
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(maskbench, ec)) {
    if (entry.path().extension() == ".jsonl") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  int n = 0;
  for (const fs::path& file : files) {
    std::ifstream in(file);
    std::string line;
    int taken = 0;
    // Small schemas sit anywhere in a file; a bounded look keeps the generator quick.
    for (int read = 0; taken < kFixtureSchemasPerFile && read < 200 && std::getline(in, line);
         ++read) {
      const auto record = nlohmann::ordered_json::parse(line, nullptr, false);
      if (record.is_discarded() || !record.is_object() || !record.contains("schema")) continue;
      const std::string schema = record["schema"].dump();
      if (schema.size() > kMaxFixtureSchemaBytes) continue;
      std::ofstream(dir + "/maskbench_" + file.stem().string() + "_" + std::to_string(taken),
                    std::ios::binary)
          << schema;
      ++taken;
      ++n;
    }
  }
  return n;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  int n = 0;
#ifdef SYNAPSE_SEEDS_JSON_SCHEMA
  for (const char* schema : kSchemas) {
    std::ofstream(dir + "/schema_" + std::to_string(n++), std::ios::binary) << schema;
  }
  n += write_fixture_schemas(dir);
  std::printf("make_json_schema_seeds: %d seeds\n", n);
#else
  for (const char* grammar : kGrammars) {
    std::ofstream(dir + "/gbnf_" + std::to_string(n++), std::ios::binary) << grammar;
  }
  std::printf("make_gbnf_seeds: %d seeds\n", n);
#endif
  return 0;
}
