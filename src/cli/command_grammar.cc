// SPDX-License-Identifier: Apache-2.0
// `synapse grammar bench --vocab VOCAB [--limit N] [--flexible] [--definition-order] --json
// FILE_OR_DIR...`: the MaskBench protocol over JSONL files of schemas with valid and invalid
// instances (a folder means every .jsonl in it). Prints one JSON object with the counts and the
// time per mask and per compile; a progress line on a terminal.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "base/progress.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "constrain/maskbench.h"
#include "format/gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace synapse::cli {
namespace {

using Json = nlohmann::ordered_json;

struct BenchOptions {
  std::string vocab;
  std::vector<std::string> inputs;
  size_t limit = 0;  // schemas per file; 0 = all
  bool flexible = false;
  bool definition_order = false;
};

Result<std::vector<std::filesystem::path>> list_inputs(const std::vector<std::string>& inputs) {
  std::vector<std::filesystem::path> files;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (std::filesystem::is_directory(input, ec)) {
      std::vector<std::filesystem::path> found;
      for (const auto& entry : std::filesystem::directory_iterator(input, ec)) {
        if (entry.path().extension() == ".jsonl") found.push_back(entry.path());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (std::filesystem::is_regular_file(input, ec)) {
      files.emplace_back(input);
    } else {
      return Status(ErrorCode::kNotFound, "no such file or folder", ErrorWhere{.path = input});
    }
  }
  return files;
}

int run_bench(const BenchOptions& o) {
  auto file = GgufFile::open(o.vocab);
  if (!file.ok()) return fail(file.status());
  auto tok = tokenizer::Tokenizer::from_gguf(file->metadata());
  if (!tok.ok()) return fail(std::move(tok).take_status().with_path(o.vocab));
  auto trie = std::make_shared<const constrain::TokenTrie>(
      constrain::TokenTrie::from_tokenizer(*tok, {tok->vocab().special().eos}));
  auto files = list_inputs(o.inputs);
  if (!files.ok()) return fail(files.status());

  // Read every record first so the progress line knows the total.
  std::vector<std::pair<std::string, Json>> records;
  for (const auto& path : *files) {
    std::ifstream in(path);
    std::string line;
    size_t taken = 0;
    for (size_t number = 1; std::getline(in, line); ++number) {
      if (line.empty()) continue;
      if (o.limit != 0 && taken == o.limit) break;
      Json record = Json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (record.is_discarded() || !record.is_object() || !record.contains("schema")) {
        return fail(Status(ErrorCode::kInvalidJson, "not a MaskBench record",
                           ErrorWhere{.path = path.string() + ":" + std::to_string(number)}));
      }
      records.emplace_back(path.stem().string(), std::move(record));
      ++taken;
    }
  }
  // MaskBench's protocol is the schema's own semantics: keys in any order (its instances keep
  // their authors' order).
  constrain::MaskBench bench(
      *tok, trie,
      constrain::JsonSchemaOptions{
          .flexible_whitespace = o.flexible,
          .property_order = o.definition_order
                                ? constrain::JsonSchemaOptions::PropertyOrder::kDefinition
                                : constrain::JsonSchemaOptions::PropertyOrder::kAny});
  ProgressLine progress("grammar bench", records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    bench.run_record(records[i].second, records[i].first);
    progress.update(i + 1);
  }
  progress.finish();
  Json report = bench.report();
  report["vocab"] = std::filesystem::path(o.vocab).filename().string();
  std::cout << report.dump(2) << "\n";
  return kExitOk;
}

}  // namespace

void add_grammar_command(CLI::App& app, int& exit_code) {
  CLI::App* grammar = app.add_subcommand("grammar", "Constrained decoding: schemas and grammars");
  grammar->require_subcommand(1);
  auto o = std::make_shared<BenchOptions>();
  CLI::App* bench = grammar->add_subcommand(
      "bench", "MaskBench: compile schemas, feed their instances through token masks, time it");
  bench->add_option("--vocab", o->vocab, "tokenizer GGUF (e.g. llama3-vocab.gguf)")->required();
  bench->add_option("--json", o->inputs, "MaskBench .jsonl files or folders of them")->required();
  bench->add_option("--limit", o->limit, "at most N schemas from each file (0: all)");
  bench->add_flag("--flexible", o->flexible, "allow whitespace between JSON tokens");
  bench->add_flag("--definition-order", o->definition_order,
                  "declared properties only in `properties` order (as served), not in any order");
  bench->callback([o, &exit_code] { exit_code = run_bench(*o); });
}

}  // namespace synapse::cli
