// SPDX-License-Identifier: Apache-2.0
// `synapse tokenize -m MODEL_OR_VOCAB [-p TEXT | -f FILE] [--ids | --pieces | --json] [--special]
// [--no-bos] [--detokenize] [--jsonl]`: text to token ids (and back) with a model's own
// tokenizer, read from a GGUF file, a package, a stored model (leased while the command runs) or
// a Hugging Face tokenizer.json (or a folder holding one).
// --jsonl is the batch mode: one process tokenizes a whole corpus, one JSON line in, one JSON
// array of ids out.
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/json_body.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "format/model_file.h"
#include "store/model_ref.h"
#include "tokenizer/tokenizer.h"

namespace synapse::cli {
namespace {

using Json = nlohmann::json;
using tokenizer::TokenId;
using tokenizer::Tokenizer;

struct Options {
  std::string model;
  std::string store;
  std::string prompt;
  std::string file;
  bool ids = false;
  bool pieces = false;
  bool json = false;
  bool special = false;
  bool no_bos = false;
  bool detokenize = false;
  bool jsonl = false;
};

// `lease` keeps a stored model for as long as the caller holds it.
Result<Tokenizer> load_tokenizer(const Options& o, std::optional<ModelLease>& lease) {
  const std::string& ref = o.model;
  std::error_code ec;
  if (std::filesystem::is_directory(ref, ec)) {
    return Tokenizer::from_hf_json_file((std::filesystem::path(ref) / "tokenizer.json").string());
  }
  if (ref.ends_with(".json")) return Tokenizer::from_hf_json_file(ref);
  // A GGUF is read as it is: tokenizing does not run the model, so there is nothing to prepare.
  SYN_ASSIGN_OR_RETURN(ResolvedModel model, resolve_model(ref, {.store_directory = o.store}));
  lease = std::move(model.lease);
  SYN_ASSIGN_OR_RETURN(const std::unique_ptr<ModelFile> file, open_model_file(model.path));
  auto tok = Tokenizer::from_gguf(file->metadata());
  if (!tok.ok()) return std::move(tok).take_status().with_path(model.path);
  return tok;
}

Result<std::string> read_input(const Options& o) {
  if (!o.prompt.empty()) return o.prompt;
  std::ostringstream text;
  if (!o.file.empty()) {
    std::ifstream in(o.file, std::ios::binary);
    if (!in) return Status(ErrorCode::kNotFound, "cannot open input", ErrorWhere{.path = o.file});
    text << in.rdbuf();
  } else {
    text << std::cin.rdbuf();
  }
  return text.str();
}

// Ids written as "1 2 3", "1,2,3" or "[1, 2, 3]".
Result<std::vector<TokenId>> parse_ids(const std::string& text) {
  std::vector<TokenId> ids;
  std::string token;
  auto flush = [&]() -> Status {
    if (token.empty()) return ok_status();
    char* end = nullptr;
    const long value = std::strtol(token.c_str(), &end, 10);
    if (*end != '\0' || value < INT32_MIN || value > INT32_MAX) {
      return Status(ErrorCode::kInvalidArgument, "not a token id: '" + token + "'");
    }
    ids.push_back(static_cast<TokenId>(value));
    token.clear();
    return ok_status();
  };
  for (const char c : text) {
    if (c == ' ' || c == ',' || c == '\n' || c == '\r' || c == '\t' || c == '[' || c == ']') {
      SYN_RETURN_IF_ERROR(flush());
    } else {
      token += c;
    }
  }
  SYN_RETURN_IF_ERROR(flush());
  return ids;
}

std::string json_dump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Batch mode: {"text": ..., "parse_special": bool} per line in, a JSON array of ids per line out.
int run_jsonl(const Tokenizer& tok, const Options& o) {
  tokenizer::EncodeScratch scratch;
  std::vector<TokenId> ids;
  std::string line, out;
  struct stat input {};
  const bool interactive = ::fstat(0, &input) != 0 || !S_ISREG(input.st_mode);
  for (size_t number = 1; std::getline(std::cin, line); ++number) {
    // Through the one JSON entry point (depth, duplicate keys, overflow); a refusal reads as any
    // other bad line.
    Result<Json> parsed = parse_json_text<Json>(line, JsonLimits{.max_bytes = line.size()},
                                                JsonShape::kAny, "the line");
    const Json record = parsed.ok() ? std::move(*parsed) : Json(Json::value_t::discarded);
    const auto text = record.is_object() ? record.find("text") : record.end();
    if (record.is_discarded() || text == record.end() || !text->is_string()) {
      return fail(Status(
          ErrorCode::kInvalidArgument,
          "line " + std::to_string(number) + ": expected a JSON object with a string \"text\"",
          ErrorWhere{.field = "stdin"}));
    }
    const auto parse_special = record.find("parse_special");
    ids.clear();
    tok.encode(text->get_ref<const std::string&>(),
               {.add_special = !o.no_bos,
                .parse_special = parse_special != record.end() && parse_special->is_boolean()
                                     ? parse_special->get<bool>()
                                     : o.special},
               scratch, ids);
    out = "[";
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i > 0) out += ',';
      out += std::to_string(ids[i]);
    }
    out += "]\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    // A client on a pipe may wait for each answer before it sends the next line; a corpus read
    // from a file needs no flush per line.
    if (interactive) std::fflush(stdout);
  }
  return kExitOk;
}

int run(const Options& o) {
  std::optional<ModelLease> lease;
  auto tok = load_tokenizer(o, lease);
  if (!tok.ok()) return fail(tok.status());
  if (o.jsonl) return run_jsonl(*tok, o);
  auto input = read_input(o);
  if (!input.ok()) return fail(input.status());

  if (o.detokenize) {
    auto ids = parse_ids(*input);
    if (!ids.ok()) return fail(ids.status());
    auto text = tok->decode(*ids, {.render_special = o.special});
    if (!text.ok()) return fail(text.status());
    if (o.json) {
      std::printf("%s\n", json_dump(Json{{"text", *text}}).c_str());
    } else {
      std::fwrite(text->data(), 1, text->size(), stdout);
      std::fputc('\n', stdout);
    }
    return kExitOk;
  }

  const std::vector<TokenId> ids =
      tok->encode(*input, {.add_special = !o.no_bos, .parse_special = o.special});
  std::vector<std::string> pieces;
  for (const TokenId id : ids) {
    std::string piece;
    tok->append_token_bytes(id, {.render_special = true}, piece);
    pieces.push_back(std::move(piece));
  }
  if (o.json) {
    std::printf(
        "%s\n",
        json_dump(Json{{"ids", ids}, {"pieces", pieces}, {"n_tokens", ids.size()}}).c_str());
  } else if (o.ids) {
    std::printf("%s\n", json_dump(Json(ids)).c_str());
  } else if (o.pieces) {
    std::printf("%s\n", json_dump(Json(pieces)).c_str());
  } else {
    for (size_t i = 0; i < ids.size(); ++i) {
      std::printf("%6d -> %s\n", ids[i], json_dump(Json(pieces[i])).c_str());
    }
  }
  return kExitOk;
}

}  // namespace

void add_tokenize_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "Turn text into token ids (or ids into text) with a model's own tokenizer");
  cmd->add_option("-m,--model", o->model,
                  "GGUF model or vocabulary, package, stored model name, or a tokenizer.json")
      ->required();
  add_store_option(cmd, o->store);
  auto* prompt = cmd->add_option("-p,--prompt", o->prompt, "Text to tokenize (or ids)");
  auto* file = cmd->add_option("-f,--file", o->file, "Read the text (or ids) from a file");
  prompt->excludes(file);
  auto* ids = cmd->add_flag("--ids", o->ids, "Print only the ids, as a JSON array");
  auto* pieces = cmd->add_flag("--pieces", o->pieces, "Print only the pieces, as a JSON array");
  auto* json = cmd->add_flag("--json", o->json, "Print ids, pieces and the count as JSON");
  ids->excludes(pieces)->excludes(json);
  pieces->excludes(json);
  cmd->add_flag("--special", o->special,
                "Parse special-token text in the input (e.g. <|im_start|>) as those tokens; "
                "with --detokenize, write control tokens' text");
  cmd->add_flag("--no-bos", o->no_bos,
                "Do not add the BOS/EOS (CLS/SEP) tokens the model asks for");
  auto* detok = cmd->add_flag("--detokenize", o->detokenize,
                              "The input holds token ids (\"1 2 3\" or \"[1, 2, 3]\"): print text");
  auto* jsonl = cmd->add_flag(
      "--jsonl", o->jsonl,
      "Batch: read {\"text\": ..., \"parse_special\": bool} lines on stdin, write one JSON array "
      "of ids per line");
  jsonl->excludes(detok)->excludes(prompt)->excludes(file)->excludes(ids)->excludes(pieces);
  jsonl->excludes(json);
  cmd->callback([o, &exit_code] { exit_code = run(*o); });
}

}  // namespace synapse::cli
