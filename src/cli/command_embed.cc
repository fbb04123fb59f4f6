// SPDX-License-Identifier: Apache-2.0
// `synapse embed -m MODEL (-p TEXT ... | -f FILE | --jsonl) [--pooling mean|cls|last|none]
// [--no-normalize] [--truncate] [--json]`: embedding vectors of texts with a BERT-family model
// or a decoder (last-token pooling by default; mean; none), as `synapse serve` computes them.
// --json prints the OpenAI embeddings response; --jsonl reads {"text": ...} (or a JSON string)
// per line on stdin and writes one JSON array per line.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "base/json_body.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/encoder_cli.h"

namespace synapse::cli {
namespace {

using Json = nlohmann::ordered_json;

struct Options {
  std::string model;
  std::string store;
  std::vector<std::string> prompts;
  std::string file;
  bool jsonl = false;
  std::string pooling;
  bool no_normalize = false;
  bool truncate = false;
  bool json = false;
  int threads = 1;
};

Result<std::vector<std::string>> read_jsonl() {
  std::vector<std::string> texts;
  std::string line;
  for (size_t number = 1; std::getline(std::cin, line); ++number) {
    if (line.empty()) continue;
    // Through the one JSON entry point (depth, duplicate keys, overflow); a refusal reads as any
    // other bad line.
    Result<Json> parsed = parse_json_text<Json>(line, JsonLimits{.max_bytes = line.size()},
                                                JsonShape::kAny, "the line");
    const Json record = parsed.ok() ? std::move(*parsed) : Json(Json::value_t::discarded);
    if (record.is_string()) {
      texts.push_back(record.get<std::string>());
      continue;
    }
    const auto text = record.is_object() ? record.find("text") : record.end();
    if (record.is_discarded() || text == record.end() || !text->is_string()) {
      return Status(ErrorCode::kInvalidArgument,
                    "line " + std::to_string(number) +
                        ": expected a JSON string or an object with a string \"text\"",
                    ErrorWhere{.field = "stdin"});
    }
    texts.push_back(text->get<std::string>());
  }
  return texts;
}

Json vector_json(const float* v, size_t n) {
  Json out = Json::array();
  for (size_t i = 0; i < n; ++i) out.push_back(v[i]);
  return out;
}

// One item's embedding: a vector, or a list of per-token vectors for pooling none.
Json embedding_json(const EmbedResult& r, const EmbeddingItem& item) {
  if (r.pooling != PoolingType::kNone) return vector_json(item.values.data(), r.n_embd);
  Json rows = Json::array();
  for (size_t t = 0; t < item.n_tokens; ++t) {
    rows.push_back(vector_json(item.values.data() + t * r.n_embd, r.n_embd));
  }
  return rows;
}

int run(const Options& o) {
  std::vector<std::string> inputs = o.prompts;
  if (!o.file.empty()) {
    auto lines = read_lines(o.file);
    if (!lines.ok()) return fail(lines.status());
    inputs = std::move(lines).value();
  } else if (o.jsonl) {
    auto texts = read_jsonl();
    if (!texts.ok()) return fail(texts.status());
    inputs = std::move(texts).value();
  }
  EmbedOptions options{.normalize = !o.no_normalize, .truncate = o.truncate};
  if (!o.pooling.empty()) options.pooling = pooling_type_from_name(o.pooling);
  std::string label;
  auto result = embed_with_model(o.model, o.store, o.threads, inputs, options, label);
  if (!result.ok()) return fail(result.status());

  if (o.jsonl) {
    for (const EmbeddingItem& item : result->items) {
      std::printf("%s\n", embedding_json(*result, item).dump().c_str());
    }
  } else if (o.json) {
    Json data = Json::array();
    for (size_t i = 0; i < result->items.size(); ++i) {
      data.push_back({{"object", "embedding"},
                      {"index", i},
                      {"embedding", embedding_json(*result, result->items[i])}});
    }
    const Json out = {
        {"object", "list"},
        {"data", std::move(data)},
        {"model", label},
        {"usage",
         {{"prompt_tokens", result->prompt_tokens}, {"total_tokens", result->prompt_tokens}}}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("model %s: %zu inputs, %zu tokens, %zu dimensions, %s pooling%s\n", label.c_str(),
                result->items.size(), result->prompt_tokens, result->n_embd,
                std::string(pooling_type_name(result->pooling)).c_str(),
                options.normalize ? ", L2-normalized" : "");
    for (size_t i = 0; i < result->items.size(); ++i) {
      const EmbeddingItem& item = result->items[i];
      const size_t rows = result->pooling == PoolingType::kNone ? item.n_tokens : 1;
      for (size_t r = 0; r < rows; ++r) {
        std::string line = "[" + std::to_string(i) + "]";
        if (rows > 1) line += "[" + std::to_string(r) + "]";
        line += " (" + std::to_string(item.n_tokens) + " tokens" +
                (item.truncated ? ", truncated" : "") + "):";
        for (size_t e = 0; e < result->n_embd; ++e) {
          char number[32];
          std::snprintf(number, sizeof number, " %.6f",
                        static_cast<double>(item.values[r * result->n_embd + e]));
          line += number;
        }
        std::printf("%s\n", line.c_str());
      }
    }
  }
  return kExitOk;
}

}  // namespace

void add_embed_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "embed",
      "Embedding vectors of texts with a BERT-family model (MiniLM, BGE, E5) or a decoder "
      "(any decoder architecture: last-token pooling by default, as Qwen3-Embedding)");
  cmd->add_option("-m,--model", o->model, "GGUF model, package or stored model name")->required();
  add_store_option(cmd, o->store);
  auto* prompt = cmd->add_option("-p,--prompt", o->prompts, "Text to embed (repeatable)");
  auto* file =
      cmd->add_option("-f,--file", o->file, "Read inputs from a file, one per line ('-': stdin)");
  auto* jsonl = cmd->add_flag("--jsonl", o->jsonl,
                              "Read {\"text\": ...} or a JSON string per line on stdin; write one "
                              "JSON array per line");
  prompt->excludes(file)->excludes(jsonl);
  file->excludes(jsonl);
  cmd->add_option("--pooling", o->pooling,
                  "Pooling (default: the model's pooling_type; decoders: last; cls needs an "
                  "encoder)")
      ->check(CLI::IsMember({"mean", "cls", "last", "none"}));
  cmd->add_flag("--no-normalize", o->no_normalize, "Do not L2-normalize the vectors");
  cmd->add_flag("--truncate", o->truncate,
                "Cut inputs longer than the model's context (default: an error)");
  auto* json = cmd->add_flag("--json", o->json, "Print the OpenAI embeddings response");
  json->excludes(jsonl);
  add_threads_option(cmd, o->threads);
  cmd->callback([o, &exit_code, cmd] {
    if (o->prompts.empty() && o->file.empty() && !o->jsonl) {
      std::fprintf(stderr, "error: give inputs with -p, -f or --jsonl\n%s", cmd->help().c_str());
      exit_code = kExitUsage;
      return;
    }
    exit_code = run(*o);
  });
}

}  // namespace synapse::cli
