// SPDX-License-Identifier: Apache-2.0
// `synapse generate -m MODEL (-p TEXT | -f FILE) [-n N] [--temp --top-k --top-p --min-p
// --repeat-penalty --repeat-last-n --presence-penalty --frequency-penalty --seed --stop S]
// [--json-schema FILE [--flexible-whitespace] | --grammar FILE] [--ctx N] [--threads N]
// [--draft MODEL | --lookup] [--draft-max N] [--json]`: streams the generated text (not the prompt)
// to stdout as it is produced; timings go to stderr (load, prefill and decode tokens/s, time to
// first token). An empty prompt starts from BOS alone. Sampling is llama.cpp's chain with its
// defaults (src/sample;
// --temp 0 is greedy); stop strings are matched on the text across token boundaries and are not
// printed. --json-schema / --grammar constrain every token to the schema or GBNF grammar
// (src/constrain), and end of generation to where the text is complete. --draft / --lookup
// decode speculatively (src/speculative): faster where drafts are right, the same output.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/eval_runner.h"
#include "cli/model_runner.h"
#include "constrain/gbnf.h"
#include "constrain/json_schema.h"
#include "constrain/token_masker.h"
#include "runtime/engine.h"
#include "sample/sampler.h"
#include "sample/stop_matcher.h"
#include "serve/end_of_generation.h"
#include "speculative/draft_model.h"
#include "speculative/prompt_lookup.h"
#include "speculative/speculative_decoder.h"
#include "tokenizer/detokenizer.h"

namespace synapse::cli {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

// Drafted tokens per step unless --draft-max says otherwise: 3 to 8 measured within the noise of
// each other with a draft model and with prompt lookup (docs/speculative.md).
constexpr size_t kDefaultDraftMax = 6;

struct GenerateOptions {
  RunOptions run;
  std::string prompt;
  std::string prompt_file;
  int n_predict = 128;
  SamplingParams sampling;
  std::vector<std::string> stop;
  bool json = false;
  std::string json_schema_file;      // constrain the output to this JSON Schema
  std::string grammar_file;          // ... or to this GBNF grammar
  bool flexible_whitespace = false;  // the schema's JSON may have whitespace between tokens
  std::string draft;                 // speculative decoding with this draft model ...
  bool lookup = false;               // ... or with prompt lookup
  size_t draft_max = kDefaultDraftMax;
};

// The grammar of --json-schema or --grammar; null when neither is given.
Result<std::shared_ptr<const constrain::Grammar>> load_constraint(const GenerateOptions& o) {
  if (o.json_schema_file.empty() && o.grammar_file.empty()) {
    return std::shared_ptr<const constrain::Grammar>();
  }
  const std::string& path = o.json_schema_file.empty() ? o.grammar_file : o.json_schema_file;
  SYN_ASSIGN_OR_RETURN(const std::string text, read_text_file(path));
  Result<constrain::Grammar> grammar = Status(ErrorCode::kInternal, "unset");
  if (!o.json_schema_file.empty()) {
    const nlohmann::ordered_json schema =
        nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (schema.is_discarded()) {
      return Status(ErrorCode::kInvalidJson, "the schema is not JSON", ErrorWhere{.path = path});
    }
    grammar = constrain::compile_json_schema(
        schema, constrain::JsonSchemaOptions{.flexible_whitespace = o.flexible_whitespace});
  } else {
    grammar = constrain::compile_gbnf(text);
  }
  if (!grammar.ok()) return std::move(grammar).take_status().with_path(path);
  return std::make_shared<const constrain::Grammar>(std::move(grammar).value());
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

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
    const bool read_failed = std::ferror(f) != 0;
    (void)std::fclose(f);  // read only: nothing is lost if closing fails
    if (read_failed) {
      return fail(Status(ErrorCode::kIoError, "reading the prompt file failed",
                         ErrorWhere{.path = o.prompt_file}));
    }
  }
  if (Status valid = validate(o.sampling); !valid.ok()) return fail(valid);
  Result<StopMatcher> stops = StopMatcher::create(o.stop);
  if (!stops.ok()) return fail(stops.status());
  Result<LoadedModel> loaded = load_model(o.run);
  if (!loaded.ok()) return fail(loaded.status());
  DecoderModel& model = *loaded->model;
  Result<Sampler> sampler = Sampler::create(o.sampling, static_cast<int32_t>(model.n_vocab()));
  if (!sampler.ok()) return fail(sampler.status());
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
  const std::vector<int32_t> eog = serve::end_of_generation_tokens(model);
  Result<std::shared_ptr<const constrain::Grammar>> grammar = load_constraint(o);
  if (!grammar.ok()) return fail(grammar.status());
  std::optional<constrain::TokenMasker> masker;
  std::optional<constrain::Matcher> matcher;
  std::vector<uint64_t> mask;
  std::vector<float> masked;
  if (*grammar) {
    masker.emplace(*grammar, std::make_shared<const constrain::TokenTrie>(
                                 constrain::TokenTrie::from_tokenizer(*tok, {})));
    matcher.emplace(masker->new_matcher());
  }

  std::unique_ptr<DecoderModel> draft_model;
  std::unique_ptr<Drafter> drafter;
  if (!o.draft.empty()) {
    Result<std::unique_ptr<DecoderModel>> draft = load_draft_model(o.draft, o.run, *loaded);
    if (!draft.ok()) return fail(draft.status());
    draft_model = std::move(*draft);
    drafter = std::make_unique<DraftModelDrafter>(*draft_model);
  } else if (o.lookup) {
    drafter = std::make_unique<PromptLookupDrafter>();
  }

  Engine engine(model);
  Session session(engine);
  SpeculativeDecoder decoder(session, drafter.get(), o.draft_max);
  tokenizer::StreamingDetokenizer detok(*tok);
  std::string text, piece;
  std::vector<int32_t> generated;
  std::vector<int32_t> context = ids;  // the prompt and every token chosen: what drafts follow
  std::string stop_reason = "length";
  // Text cleared by the stop matcher: kept for --json, streamed otherwise.
  auto emit = [&](std::string_view released) {
    text += released;
    if (!o.json && !released.empty()) {
      (void)std::fwrite(released.data(), 1, released.size(), stdout);  // as fprintf: no check
      std::fflush(stdout);
    }
  };
  // The token after `row`, checked against a drafted token when there is one; nullopt when the
  // grammar allows nothing (stop_reason says why).
  auto choose = [&](std::span<const float> row,
                    std::optional<int32_t> draft) -> Result<std::optional<Sampler::DraftVerdict>> {
    if (masker) {
      constrain::mask_logits(*masker, *matcher, eog, row, mask, masked);
      row = masked;
      // Nothing allowed: the text is complete and the model has no end token to say so.
      if (std::all_of(mask.begin(), mask.end(), [](uint64_t w) { return w == 0; })) {
        stop_reason = matcher->accepts_end() ? "end_of_generation" : "grammar_dead_end";
        return std::optional<Sampler::DraftVerdict>();
      }
    }
    if (draft) {
      SYN_ASSIGN_OR_RETURN(const Sampler::DraftVerdict verdict,
                           sampler->sample_against_draft(row, *draft));
      return std::optional(verdict);
    }
    SYN_ASSIGN_OR_RETURN(const int32_t token, sampler->sample(row));
    return std::optional(Sampler::DraftVerdict{token, false});
  };
  // Takes a chosen token into the text; false when generation ends with it.
  auto take = [&](int32_t id) -> Result<bool> {
    sampler->accept(id);
    if (masker && std::find(eog.begin(), eog.end(), id) == eog.end()) {
      SYN_CHECK(masker->consume_token(*matcher, id), "the sampler drew a token the mask refused");
    }
    if (std::find(eog.begin(), eog.end(), id) != eog.end()) {
      stop_reason = "end_of_generation";
      return false;
    }
    generated.push_back(id);
    context.push_back(id);
    piece.clear();
    SYN_RETURN_IF_ERROR(detok.push(id, piece));
    const StopMatcher::Step step = stops->feed(piece);
    emit(step.text);
    if (step.stopped) {
      stop_reason = "stop";
      return false;
    }
    if (generated.size() >= static_cast<size_t>(o.n_predict)) return false;
    // The tokens before this one fill the context (the session may hold unverified drafts too).
    if (context.size() - 1 >= model.n_ctx()) {
      stop_reason = "context";
      return false;
    }
    return true;
  };

  sampler->accept(ids);  // the penalties' window starts in the prompt, as in llama.cpp
  const auto t_prefill = Clock::now();
  Result<std::span<const float>> logits = session.append(ids);
  if (!logits.ok()) return fail(logits.status());
  const double prefill_ms = ms_since(t_prefill);
  const auto t_decode = Clock::now();
  bool going = o.n_predict > 0;
  if (going) {
    const Result<std::optional<Sampler::DraftVerdict>> first = choose(*logits, std::nullopt);
    if (!first.ok()) return fail(first.status());
    going = first->has_value();
    if (going) {
      const Result<bool> more = take((*first)->token);
      if (!more.ok()) return fail(more.status());
      going = *more;
    }
  }
  // Each step runs the last token chosen and the drafts after it; the rows are taken in order
  // while the choices agree with the drafts (without drafts: one row, plain decoding).
  while (going) {
    if (const Status s = decoder.advance(context); !s.ok()) return fail(s);
    size_t accepted = 0;
    bool rejected = false;
    for (size_t i = 0;; ++i) {
      const std::span<const int32_t> drafts = decoder.drafts();
      const Result<std::optional<Sampler::DraftVerdict>> verdict =
          choose(decoder.row(i), i < drafts.size() ? std::optional(drafts[i]) : std::nullopt);
      if (!verdict.ok()) return fail(verdict.status());
      if (!verdict->has_value()) {
        going = false;
        break;
      }
      const Result<bool> more = take((*verdict)->token);
      if (!more.ok()) return fail(more.status());
      if (!(*verdict)->accepted) {
        rejected = i < drafts.size();
        going = *more;
        break;
      }
      ++accepted;
      if (!*more) {
        going = false;
        break;
      }
    }
    decoder.settle(accepted, rejected);
  }
  if (!stops->stopped()) {
    piece.clear();
    detok.finish(piece);
    emit(stops->feed(piece).text);
    if (!stops->stopped()) emit(stops->flush());
  }
  const double decode_ms = ms_since(t_decode);
  const double ttft_ms = prefill_ms;
  // Decode speed counts the forward passes after the first token (n - 1 of them).
  const size_t decode_steps = generated.size() > 1 ? generated.size() - 1 : 0;
  const double prefill_tps = static_cast<double>(ids.size()) / (prefill_ms / 1000.0);
  const double decode_tps =
      decode_steps > 0 ? static_cast<double>(decode_steps) / (decode_ms / 1000.0) : 0.0;
  if (o.json) {
    Json out;
    out["text"] = text;
    out["tokens"] = generated;
    out["n_prompt_tokens"] = ids.size();
    out["n_generated_tokens"] = generated.size();
    out["stop_reason"] = stop_reason;
    out["seed"] = sampler->seed();
    out["timings"] = {{"load_ms", loaded->load_ms},
                      {"ttft_ms", ttft_ms},
                      {"prefill_tokens_per_s", prefill_tps},
                      {"decode_tokens_per_s", decode_tps},
                      {"decode_steps", decoder.stats().steps},
                      {"draft_tokens", decoder.stats().drafted},
                      {"draft_tokens_accepted", decoder.stats().accepted},
                      {"draft_acceptance_rate", decoder.stats().acceptance_rate()},
                      {"draft_ms", decoder.stats().draft_ms},
                      {"target_ms", decoder.stats().target_ms}};
    std::printf("%s\n", out.dump(2, ' ', false, Json::error_handler_t::replace).c_str());
  } else {
    std::printf("\n");
  }
  std::fprintf(stderr,
               "load %.1f ms | prompt %zu tokens, %.1f tok/s | generated %zu tokens, %.1f tok/s | "
               "time to first token %.1f ms | stop: %s",
               loaded->load_ms, ids.size(), prefill_tps, generated.size(), decode_tps, ttft_ms,
               stop_reason.c_str());
  if (drafter) {
    std::fprintf(stderr, " | drafts %zu, accepted %zu (%.1f%%) in %zu steps",
                 decoder.stats().drafted, decoder.stats().accepted,
                 100.0 * decoder.stats().acceptance_rate(), decoder.stats().steps);
  }
  std::fprintf(stderr, "\n");
  return kExitOk;
}

}  // namespace

void add_generate_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate text from a prompt");
  add_run_options(cmd, o->run);
  auto* p = cmd->add_option("-p,--prompt", o->prompt, "Prompt text (empty: start from BOS)");
  auto* f = cmd->add_option("-f,--file", o->prompt_file, "Read the prompt from a file");
  p->excludes(f);
  cmd->add_option("-n,--n-predict", o->n_predict, "Tokens to generate")->capture_default_str();
  SamplingParams& sp = o->sampling;
  cmd->add_option("--temp", sp.temperature, "Temperature (0: greedy)")->capture_default_str();
  cmd->add_option("--top-k", sp.top_k, "Keep the k most likely tokens (0: off)")
      ->capture_default_str();
  cmd->add_option("--top-p", sp.top_p, "Nucleus: smallest set with this probability (1: off)")
      ->capture_default_str();
  cmd->add_option("--min-p", sp.min_p, "Drop tokens below min-p x the top probability (0: off)")
      ->capture_default_str();
  cmd->add_option("--repeat-penalty", sp.repeat_penalty, "Repetition penalty (1: off)")
      ->capture_default_str();
  cmd->add_option("--repeat-last-n", sp.penalty_last_n,
                  "Tokens the penalties look back over (-1: all, 0: off)")
      ->capture_default_str();
  cmd->add_option("--presence-penalty", sp.presence_penalty, "Presence penalty")
      ->capture_default_str();
  cmd->add_option("--frequency-penalty", sp.frequency_penalty, "Frequency penalty")
      ->capture_default_str();
  cmd->add_option("-s,--seed", sp.seed, "Sampling seed (default: random, printed in --json)");
  cmd->add_option("--stop", o->stop, "Stop at this text (repeatable; not printed)");
  auto* schema = cmd->add_option("--json-schema", o->json_schema_file,
                                 "Constrain the output to the JSON Schema in this file");
  cmd->add_option("--grammar", o->grammar_file,
                  "Constrain the output to the GBNF grammar (llama.cpp's format) in this file")
      ->excludes(schema);
  cmd->add_flag("--flexible-whitespace", o->flexible_whitespace,
                "With --json-schema: allow whitespace between JSON tokens (default compact)")
      ->needs(schema);
  auto* draft = cmd->add_option("--draft", o->draft,
                                "Speculative decoding: a smaller model with the same vocabulary "
                                "drafts tokens the model verifies in one step (same output)");
  cmd->add_flag("--lookup", o->lookup,
                "Speculative decoding by prompt lookup: drafts are what followed the last tokens "
                "earlier in the text (no draft model; same output)")
      ->excludes(draft);
  cmd->add_option("--draft-max", o->draft_max, "Most drafted tokens per step")
      ->check(CLI::Range(size_t{1}, kMaxDraftTokens))
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object at the end instead of streaming");
  cmd->callback([o, &exit_code] { exit_code = run_generate(*o); });
}

}  // namespace synapse::cli
