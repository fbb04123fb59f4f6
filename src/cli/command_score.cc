// SPDX-License-Identifier: Apache-2.0
// `synapse score -m MODEL (-p TEXT | -f FILE) [--json]`: teacher-forced log-probabilities of
// every token of a text given the ones before it (one prefill, every row's logits) and their
// sum, the function the service exposes for scoring. The text is tokenized as the model does
// (BOS first when it adds one); the first token has no prediction and is not scored.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/eval_runner.h"
#include "cli/model_runner.h"
#include "eval/token_scores.h"

namespace synapse::cli {
namespace {

using Json = nlohmann::ordered_json;

struct ScoreOptions {
  RunOptions run;
  std::string text;
  std::string text_file;
  uint32_t batch = 512;
  bool json = false;
};

int run_score(const ScoreOptions& o) {
  std::string text = o.text;
  if (!o.text_file.empty()) {
    Result<std::string> read = read_text_file(o.text_file);
    if (!read.ok()) return fail(read.status());
    text = std::move(*read);
  }
  Result<LoadedModel> loaded = load_model(o.run);
  if (!loaded.ok()) return fail(loaded.status());
  DecoderModel& model = *loaded->model;
  Result<tokenizer::Tokenizer> tok = load_tokenizer(model);
  if (!tok.ok()) return fail(tok.status());
  const std::vector<int32_t> tokens = tok->encode(text);
  EngineScorer scorer(model, model.n_ctx(), 1, o.batch);
  Result<SequenceScore> score =
      score_sequence(tokens, model.n_vocab(), model.n_ctx(), scorer.scorer());
  if (!score.ok()) return fail(score.status());
  auto piece = [&tok](int32_t id) {
    std::string bytes;
    tok->append_token_bytes(id, {}, bytes);
    return bytes;
  };
  if (o.json) {
    Json list = Json::array();
    for (const TokenScore& t : score->tokens) {
      list.push_back(
          {{"id", t.id}, {"text", piece(t.id)}, {"logprob", t.log_prob}, {"top", t.top}});
    }
    Json out;
    out["tokens"] = std::move(list);
    out["n_tokens"] = tokens.size();
    out["n_scored"] = score->tokens.size();
    out["sum_logprob"] = score->sum_log_prob;
    out["perplexity"] = score->perplexity;
    std::printf("%s\n", out.dump(2, ' ', false, Json::error_handler_t::replace).c_str());
  } else {
    std::printf("%5s %8s %12s  %s\n", "pos", "id", "logprob", "token");
    for (size_t i = 0; i < score->tokens.size(); ++i) {
      const TokenScore& t = score->tokens[i];
      std::printf("%5zu %8d %12.6f  %s%s\n", i + 1, t.id, t.log_prob,
                  Json(piece(t.id)).dump(-1, ' ', false, Json::error_handler_t::replace).c_str(),
                  t.top ? "  (top)" : "");
    }
    std::printf("sum logprob %.6f over %zu tokens, perplexity %.4f\n", score->sum_log_prob,
                score->tokens.size(), score->perplexity);
  }
  return kExitOk;
}

}  // namespace

void add_score_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ScoreOptions>();
  CLI::App* cmd =
      app.add_subcommand("score", "Teacher-forced log-probabilities of every token of a text");
  add_run_options(cmd, o->run);
  auto* p = cmd->add_option("-p,--prompt", o->text, "Text to score");
  auto* f = cmd->add_option("-f,--file", o->text_file, "Read the text from a file");
  p->excludes(f);
  cmd->add_option("-b,--batch", o->batch, "Rows per forward pass")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 16));
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o, &exit_code] { exit_code = run_score(*o); });
}

}  // namespace synapse::cli
