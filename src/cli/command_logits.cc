// SPDX-License-Identifier: Apache-2.0
// `synapse logits -m MODEL --ids 1,2,3 [-o FILE]`: runs the ids as one sequence and writes the
// logits of every position as raw float32 [n_tokens][n_vocab] (like llama.cpp's --save-logits),
// the tool for checking parity against any reference. Without -o, prints the argmax per position.
#include <cstdio>

#include "base/atomic_file.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/model_runner.h"
#include "runtime/engine.h"

namespace synapse::cli {
namespace {

struct LogitsOptions {
  RunOptions run;
  std::vector<int32_t> ids;
  std::string output;
  size_t batch = 512;
};

int run_logits(const LogitsOptions& o) {
  Result<LoadedModel> loaded = load_model(o.run);
  if (!loaded.ok()) return fail(loaded.status());
  DecoderModel& model = *loaded->model;
  EngineConfig config;
  config.max_batch_tokens = o.batch;
  Engine engine(model, config);
  Session session(engine);
  Result<std::span<const float>> logits = session.append_all(o.ids);
  if (!logits.ok()) return fail(logits.status());
  const size_t n_vocab = model.n_vocab();
  if (!o.output.empty()) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(logits->data());
    Result<AtomicFile> file = AtomicFile::create(o.output);
    if (!file.ok()) return fail(file.status());
    Status s = file->write(std::span<const uint8_t>(bytes, logits->size() * sizeof(float)));
    if (s.ok()) s = file->commit();
    if (!s.ok()) return fail(s);
    std::fprintf(stderr, "wrote %zu x %zu float32 logits to %s\n", o.ids.size(), n_vocab,
                 o.output.c_str());
  } else {
    for (size_t i = 0; i < o.ids.size(); ++i) {
      const auto row = logits->subspan(i * n_vocab, n_vocab);
      const int32_t best = greedy_token(row);
      std::printf("%zu\t%d\t%d\t%.6f\n", i, o.ids[i], best,
                  static_cast<double>(row[static_cast<size_t>(best)]));
    }
  }
  return kExitOk;
}

}  // namespace

void add_logits_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<LogitsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "logits", "Run token ids as one sequence and write every position's logits (float32)");
  add_run_options(cmd, o->run);
  cmd->add_option("--ids", o->ids, "Token ids, comma-separated")->required()->delimiter(',');
  cmd->add_option("-o,--output", o->output,
                  "File for raw float32 [n_tokens][n_vocab] (default: print argmax per position)");
  cmd->add_option("-b,--batch", o->batch, "Rows per forward pass")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->callback([o, &exit_code] { exit_code = run_logits(*o); });
}

}  // namespace synapse::cli
