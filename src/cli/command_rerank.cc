// SPDX-License-Identifier: Apache-2.0
// `synapse rerank -m MODEL -q QUERY (-d DOC ... | -f FILE) [--top-n N] [--json]`: scores query /
// document pairs with a cross-encoder (a BERT model with a classification head) and prints them
// best first. Scores are the head's raw output, as llama.cpp's /v1/rerank returns them.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/encoder_cli.h"

namespace synapse::cli {
namespace {

using Json = nlohmann::ordered_json;

struct Options {
  std::string model;
  std::string store;
  std::string query;
  std::vector<std::string> documents;
  std::string file;
  size_t top_n = 0;
  bool truncate = false;
  bool json = false;
  int threads = 1;
};

int run(const Options& o) {
  std::vector<std::string> documents = o.documents;
  if (!o.file.empty()) {
    auto lines = read_lines(o.file);
    if (!lines.ok()) return fail(lines.status());
    documents = std::move(lines).value();
  }
  auto opened = open_embedder(o.model, o.store, o.threads);
  if (!opened.ok()) return fail(opened.status());
  auto result = opened->runtime->embedder().rerank(o.query, documents, o.top_n, o.truncate);
  if (!result.ok()) return fail(result.status());
  if (o.json) {
    Json results = Json::array();
    for (const RerankItem& item : result->items) {
      results.push_back({{"index", item.index},
                         {"relevance_score", item.score},
                         {"document", {{"text", documents[item.index]}}}});
    }
    const Json out = {
        {"object", "list"},
        {"model", opened->label},
        {"results", std::move(results)},
        {"usage",
         {{"prompt_tokens", result->prompt_tokens}, {"total_tokens", result->prompt_tokens}}}};
    std::printf("%s\n", out.dump().c_str());
    return kExitOk;
  }
  std::printf("%4s  %10s  %5s  %s\n", "rank", "score", "index", "document");
  for (size_t r = 0; r < result->items.size(); ++r) {
    const RerankItem& item = result->items[r];
    std::printf("%4zu  %10.6f  %5zu  %s\n", r + 1, static_cast<double>(item.score), item.index,
                documents[item.index].c_str());
  }
  return kExitOk;
}

}  // namespace

void add_rerank_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "rerank", "Score documents against a query with a cross-encoder (BERT with a classifier)");
  cmd->add_option("-m,--model", o->model, "GGUF model, package or stored model name")->required();
  add_store_option(cmd, o->store);
  cmd->add_option("-q,--query", o->query, "The query")->required();
  auto* docs = cmd->add_option("-d,--document", o->documents, "A document (repeatable)");
  auto* file = cmd->add_option("-f,--file", o->file, "Read documents from a file, one per line");
  docs->excludes(file);
  cmd->add_option("--top-n", o->top_n, "Keep the N best (default: all)");
  cmd->add_flag("--truncate", o->truncate,
                "Cut documents so each pair fits the context (default: an error)");
  cmd->add_flag("--json", o->json,
                "Print {results: [{index, relevance_score, document}], usage} (llama-server's "
                "/v1/rerank shape)");
  add_threads_option(cmd, o->threads);
  cmd->callback([o, &exit_code, cmd] {
    if (o->documents.empty() && o->file.empty()) {
      std::fprintf(stderr, "error: give documents with -d or -f\n%s", cmd->help().c_str());
      exit_code = kExitUsage;
      return;
    }
    exit_code = run(*o);
  });
}

}  // namespace synapse::cli
