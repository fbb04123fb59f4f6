// SPDX-License-Identifier: Apache-2.0
// `synapse perplexity -m MODEL -f TEXT [-c CTX] [-b BATCH] [--chunks N] [--json]` follows the
// llama-perplexity protocol (eval/perplexity.h) and prints what it prints: the running value per
// chunk, "[1]160.2264,[2]159.0992,...", then "Final estimate: PPL = x +/- err".
// KL divergence, as llama-perplexity's --kl-divergence: `--save-logits FILE` also saves the
// scored logits of this run (e.g. the F32 model) and `--kl-divergence FILE` scores the saved
// tokens with another model (e.g. a quantized one) against them.
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/progress.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/eval_runner.h"
#include "cli/model_runner.h"
#include "eval/kl_divergence.h"
#include "eval/perplexity.h"
#include "eval/reference_logits_file.h"

namespace synapse::cli {
namespace {

using Json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

struct PerplexityCliOptions {
  RunOptions run;
  std::string text_file;
  uint32_t batch = 2048;
  uint32_t chunks = 0;
  std::string save_logits;
  std::string kl_divergence;
  bool json = false;
};

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Prints the running values as llama-perplexity does (one line that grows), unless --json.
class RunningPrinter {
 public:
  RunningPrinter(bool quiet, size_t n_chunks) : quiet_(quiet), progress_("perplexity", n_chunks) {}
  void operator()(size_t chunk, size_t, double running) {
    progress_.update(chunk + 1);
    if (quiet_) return;
    const std::string text = format_running_ppl(chunk, running);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
  void finish() {
    progress_.finish();
    if (!quiet_) std::printf("\n");
  }

 private:
  bool quiet_;
  ProgressLine progress_;
};

Json running_json(const std::vector<double>& values) {
  Json out = Json::array();
  for (double v : values) out.push_back(v);
  return out;
}

int run_kl_divergence(const PerplexityCliOptions& o, LoadedModel& loaded) {
  Result<ReferenceLogitsFile> reference = ReferenceLogitsFile::open(o.kl_divergence);
  if (!reference.ok()) return fail(reference.status());
  const ReferenceLogitsHeader& h = reference->header();
  DecoderModel& model = *loaded.model;
  if (o.run.n_ctx != 0 && o.run.n_ctx != h.n_ctx) {
    return fail(Status(ErrorCode::kInvalidArgument,
                       "the reference was scored at -c " + std::to_string(h.n_ctx) +
                           "; give the same context or none",
                       ErrorWhere{.field = "ctx"}));
  }
  if (h.n_ctx > model.n_ctx()) {
    return fail(Status(ErrorCode::kInvalidArgument,
                       "the reference's context of " + std::to_string(h.n_ctx) +
                           " exceeds this model's " + std::to_string(model.n_ctx()),
                       ErrorWhere{.field = "ctx"}));
  }
  const size_t per_pass = std::max<size_t>(1, o.batch / h.n_ctx);
  EngineScorer scorer(model, h.n_ctx, per_pass, o.batch);
  std::fprintf(stderr, "kl-divergence: %u chunks of %u tokens against %s\n", h.n_chunks, h.n_ctx,
               o.kl_divergence.c_str());
  const auto start = Clock::now();
  RunningPrinter printer(o.json, h.n_chunks);
  Result<KlDivergenceRun> run =
      compute_kl_divergence(*reference, model.n_vocab(), o.batch, scorer.scorer(),
                            [&printer](size_t c, size_t n, double v) { printer(c, n, v); });
  printer.finish();
  if (!run.ok()) return fail(run.status());
  const double seconds = seconds_since(start);
  const KlDivergenceReport& r = run->report;
  if (o.json) {
    Json out;
    out["n_chunks"] = h.n_chunks;
    out["n_ctx"] = h.n_ctx;
    out["n_tokens_scored"] = r.n_tokens;
    out["ppl"] = r.ppl;
    out["ppl_err"] = r.ppl_error;
    out["ppl_base"] = r.ppl_reference;
    out["ppl_base_err"] = r.ppl_reference_error;
    out["ln_ppl_ratio"] = r.ln_ppl_ratio;
    out["ln_ppl_ratio_err"] = r.ln_ppl_ratio_error;
    out["ppl_diff"] = r.ppl_difference;
    out["ppl_diff_err"] = r.ppl_difference_error;
    out["kld_mean"] = r.kld_mean;
    out["kld_err"] = r.kld_error;
    out["kld_max"] = r.kld.max;
    out["kld_median"] = r.kld.median;
    out["kld_p99"] = r.kld.p99;
    out["delta_p_mean"] = r.delta_p_mean;
    out["delta_p_err"] = r.delta_p_error;
    out["delta_p_rms"] = r.delta_p_rms;
    out["delta_p_max"] = r.delta_p.max;
    out["delta_p_min"] = r.delta_p.min;
    out["same_top"] = r.same_top;
    out["same_top_err"] = r.same_top_error;
    out["chunks_ppl"] = running_json(run->running_ppl);
    out["chunks_kld"] = running_json(run->running_kld);
    out["tokens_per_s"] = static_cast<double>(h.n_chunks) * h.n_ctx / seconds;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("\n%s", format_kl_report(r).c_str());
  }
  std::fprintf(stderr, "kl-divergence: %.2f s, %.1f tokens/s\n", seconds,
               static_cast<double>(h.n_chunks) * h.n_ctx / seconds);
  return kExitOk;
}

int run_perplexity(const PerplexityCliOptions& o) {
  if (o.kl_divergence.empty() && o.text_file.empty()) {
    return fail(Status(ErrorCode::kInvalidArgument, "give the text to score with -f FILE",
                       ErrorWhere{.field = "file"}));
  }
  // The chunk size is the context the model runs with: -c sets both (default 512).
  RunOptions run = o.run;
  const uint32_t n_ctx = run.n_ctx != 0 ? run.n_ctx : 512;
  std::string text;
  if (o.kl_divergence.empty()) {
    Result<std::string> read = read_text_file(o.text_file);
    if (!read.ok()) return fail(read.status());
    text = std::move(*read);
  }
  if (o.kl_divergence.empty()) run.n_ctx = n_ctx;
  Result<LoadedModel> loaded = load_model(run);
  if (!loaded.ok()) return fail(loaded.status());
  if (!o.kl_divergence.empty()) return run_kl_divergence(o, *loaded);

  DecoderModel& model = *loaded->model;
  Result<tokenizer::Tokenizer> tok = load_tokenizer(model);
  if (!tok.ok()) return fail(tok.status());
  const auto t_tokenize = Clock::now();
  const std::vector<int32_t> tokens = tok->encode(text);
  std::fprintf(stderr, "perplexity: tokenized %zu bytes into %zu tokens in %.1f ms\n", text.size(),
               tokens.size(), 1000 * seconds_since(t_tokenize));

  PerplexityOptions options;
  options.n_ctx = n_ctx;
  options.n_batch = o.batch;
  options.max_chunks = o.chunks;
  options.model_n_ctx = model.hparams().n_ctx_train;
  options.add_bos = tok->vocab().special().add_bos;
  options.bos_id = tok->vocab().special().bos;
  Result<ChunkPlan> plan = plan_chunks(tokens.size(), options, model.n_vocab());
  if (!plan.ok()) return fail(plan.status());
  std::fprintf(
      stderr,
      "perplexity: calculating perplexity over %zu chunks, n_ctx=%u, batch_size=%u, n_seq=%zu\n",
      plan->n_chunks, n_ctx, o.batch, plan->chunks_per_pass);
  EngineScorer scorer(model, n_ctx, plan->chunks_per_pass, o.batch);
  RunningPrinter printer(o.json, plan->n_chunks);
  const auto start = Clock::now();
  auto observer = [&printer](size_t c, size_t n, double v) { printer(c, n, v); };
  Result<PerplexityResult> result =
      o.save_logits.empty()
          ? compute_perplexity(tokens, options, model.n_vocab(), scorer.scorer(), observer)
          : save_reference_logits(o.save_logits, tokens, options, model.n_vocab(), scorer.scorer(),
                                  observer);
  printer.finish();
  if (!result.ok()) return fail(result.status());
  const double seconds = seconds_since(start);
  const double tokens_per_s = static_cast<double>(result->n_chunks * n_ctx) / seconds;
  if (o.json) {
    Json out;
    out["ppl"] = result->ppl;
    out["ppl_err"] = result->ppl_error;
    out["n_chunks"] = result->n_chunks;
    out["n_ctx"] = n_ctx;
    out["n_tokens"] = tokens.size();
    out["n_tokens_scored"] = result->n_scored;
    out["chunks"] = running_json(result->running_ppl);
    out["seconds"] = seconds;
    out["tokens_per_s"] = tokens_per_s;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("%s\n", format_final_ppl(result->ppl, result->ppl_error).c_str());
  }
  if (!o.save_logits.empty()) {
    std::fprintf(stderr, "perplexity: saved the reference logits to %s\n", o.save_logits.c_str());
  }
  std::fprintf(stderr, "perplexity: %.2f s, %.1f tokens/s\n", seconds, tokens_per_s);
  return kExitOk;
}

}  // namespace

void add_perplexity_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<PerplexityCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "perplexity", "Perplexity of a text (llama-perplexity protocol), or KL divergence");
  add_run_options(cmd, o->run);
  cmd->add_option("-f,--file", o->text_file, "Text to score");
  cmd->add_option("-b,--batch", o->batch,
                  "Tokens per forward pass; chunks run batch / ctx at a time")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1u << 20));
  cmd->add_option("--chunks", o->chunks, "Score at most N chunks (default: all)");
  auto* save = cmd->add_option("--save-logits", o->save_logits,
                               "Also save the scored logits as a KL-divergence reference");
  auto* kld = cmd->add_option("--kl-divergence", o->kl_divergence,
                              "Score the tokens of a saved reference against its logits");
  save->excludes(kld);
  cmd->add_flag("--json", o->json, "Print one JSON object instead of llama-perplexity's lines");
  cmd->callback([o, &exit_code] { exit_code = run_perplexity(*o); });
}

}  // namespace synapse::cli
