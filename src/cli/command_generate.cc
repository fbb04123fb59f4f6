// SPDX-License-Identifier: Apache-2.0
// `synapse generate -m MODEL (-p TEXT | -f FILE) [-n N] [--ctx N] [--threads N] [--json]`:
// streams the generated text (not the prompt) to stdout as it is produced; timings go to stderr
// (load, prefill and decode tokens/s, time to first token). An empty prompt starts from BOS
// alone. Sampling is greedy for now: choosing the next token is one call (next_token) so that
// the sampler chain plugs in there.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/model_runner.h"
#include "runtime/engine.h"
#include "tokenizer/detokenizer.h"

namespace synapse::cli {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

struct GenerateOptions {
  RunOptions run;
  std::string prompt;
  std::string prompt_file;
  int n_predict = 128;
  uint64_t seed = 0;  // for the sampler chain; greedy ignores it
  bool json = false;
};

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The next token from a logits row. Greedy for now; the sampler chain replaces this call.
int32_t next_token(std::span<const float> logits) { return greedy_token(logits); }

int run_generate(const GenerateOptions& o) {
  if (o.n_predict < 0) {
    return fail(Status(ErrorCode::kInvalidArgument, "-n must be zero or positive",
                       ErrorWhere{.field = "-n"}));
  }
  std::string prompt = o.prompt;
  if (!o.prompt_file.empty()) {
    std::FILE* f = std::fopen(o.prompt_file.c_str(), "rb");
    if (f == nullptr) {
      return fail(Status(ErrorCode::kIoError, "cannot read the prompt file",
                         ErrorWhere{.path = o.prompt_file}));
    }
    char buffer[4096];
    size_t n;
    prompt.clear();
    while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) prompt.append(buffer, n);
    std::fclose(f);
  }
  Result<LoadedModel> loaded = load_model(o.run);
  if (!loaded.ok()) return fail(loaded.status());
  DecoderModel& model = *loaded->model;
  Result<tokenizer::Tokenizer> tok = load_tokenizer(model);
  if (!tok.ok()) return fail(tok.status());
  std::vector<int32_t> ids = tok->encode(prompt);
  if (ids.empty()) {
    const int32_t bos = tok->vocab().special().bos;
    if (bos == tokenizer::kNoToken) {
      return fail(Status(ErrorCode::kInvalidArgument,
                         "empty prompt and the model has no BOS token to start from",
                         ErrorWhere{.field = "prompt"}));
    }
    ids.push_back(bos);
  }
  if (ids.size() > model.n_ctx()) {
    return fail(Status(ErrorCode::kLimitExceeded,
                       "the prompt has " + std::to_string(ids.size()) +
                           " tokens, more than the context of " + std::to_string(model.n_ctx()),
                       ErrorWhere{.field = "prompt"}));
  }
  const std::vector<int32_t> eog = end_of_generation_tokens(model);

  Engine engine(model);
  Session session(engine);
  tokenizer::StreamingDetokenizer detok(*tok);
  std::string text, piece;
  std::vector<int32_t> generated;
  std::string stop_reason = "length";

  const auto t_prefill = Clock::now();
  Result<std::span<const float>> logits = session.append(ids);
  if (!logits.ok()) return fail(logits.status());
  const double prefill_ms = ms_since(t_prefill);
  const auto t_decode = Clock::now();
  for (int i = 0; i < o.n_predict; ++i) {
    const int32_t id = next_token(*logits);
    if (std::find(eog.begin(), eog.end(), id) != eog.end()) {
      stop_reason = "end_of_generation";
      break;
    }
    generated.push_back(id);
    piece.clear();
    const Status s = detok.push(id, piece);
    if (!s.ok()) return fail(s);
    text += piece;
    if (!o.json && !piece.empty()) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
    if (i + 1 == o.n_predict) break;
    if (session.n_tokens() >= model.n_ctx()) {
      stop_reason = "context";
      break;
    }
    const int32_t next[] = {id};
    logits = session.append(next);
    if (!logits.ok()) return fail(logits.status());
  }
  piece.clear();
  detok.finish(piece);
  text += piece;
  const double decode_ms = ms_since(t_decode);
  const double ttft_ms = prefill_ms;
  // Decode speed counts the forward passes after the first token (n - 1 of them).
  const size_t decode_steps = generated.size() > 1 ? generated.size() - 1 : 0;
  const double prefill_tps = static_cast<double>(ids.size()) / (prefill_ms / 1000.0);
  const double decode_tps = decode_steps > 0 ? static_cast<double>(decode_steps) / (decode_ms / 1000.0) : 0.0;
  if (o.json) {
    Json out;
    out["text"] = text;
    out["tokens"] = generated;
    out["n_prompt_tokens"] = ids.size();
    out["n_generated_tokens"] = generated.size();
    out["stop_reason"] = stop_reason;
    out["timings"] = {{"load_ms", loaded->load_ms},
                      {"ttft_ms", ttft_ms},
                      {"prefill_tokens_per_s", prefill_tps},
                      {"decode_tokens_per_s", decode_tps}};
    std::printf("%s\n", out.dump(2, ' ', false, Json::error_handler_t::replace).c_str());
  } else {
    if (!piece.empty()) std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::printf("\n");
  }
  std::fprintf(stderr,
               "load %.1f ms | prompt %zu tokens, %.1f tok/s | generated %zu tokens, %.1f tok/s | "
               "time to first token %.1f ms | stop: %s\n",
               loaded->load_ms, ids.size(), prefill_tps, generated.size(), decode_tps, ttft_ms,
               stop_reason.c_str());
  return kExitOk;
}

}  // namespace

void add_generate_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate text from a prompt (greedy for now)");
  add_run_options(cmd, o->run);
  auto* p = cmd->add_option("-p,--prompt", o->prompt, "Prompt text (empty: start from BOS)");
  auto* f = cmd->add_option("-f,--file", o->prompt_file, "Read the prompt from a file");
  p->excludes(f);
  cmd->add_option("-n,--n-predict", o->n_predict, "Tokens to generate")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Sampling seed (greedy ignores it)");
  cmd->add_flag("--json", o->json, "Print one JSON object at the end instead of streaming");
  cmd->callback([o, &exit_code] { exit_code = run_generate(*o); });
}

}  // namespace synapse::cli
