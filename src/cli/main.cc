// SPDX-License-Identifier: Apache-2.0
// `synapse`: the command-line entry point. Each command lives in its own command_<name>.cc.
#include <cstdio>

#include "base/cpu_info.h"
#include "cli/build_info.h"
#include "cli/commands.h"

namespace synapse::cli {

std::string version_text() {
  const BuildInfo& b = build_info();
  std::string text = "synapse " + std::string(b.version) + " (commit " + std::string(b.git_commit) +
                     ", " + std::string(b.compiler) + ", " + std::string(b.build_type);
  if (!b.sanitizers.empty()) text += ", sanitizers " + std::string(b.sanitizers);
  text += ")\ncpu features:";
  for (const std::string& feature : CpuInfo::detect().features.names()) text += " " + feature;
  return text;
}

}  // namespace synapse::cli

int main(int argc, char** argv) {
  using namespace synapse::cli;
  CLI::App app{"Synapse: local-first inference engine and service"};
  app.set_version_flag("--version", version_text, "Print version, build and CPU features");
  app.require_subcommand(1);
  app.fallthrough();
  int exit_code = kExitOk;
  add_inspect_command(app, exit_code);
  add_synth_command(app, exit_code);
  add_doctor_command(app, exit_code);
  add_tokenize_command(app, exit_code);
  add_convert_command(app, exit_code);
  add_verify_command(app, exit_code);
  add_models_command(app, exit_code);
  add_bench_command(app, exit_code);
  add_embed_command(app, exit_code);
  add_rerank_command(app, exit_code);
  add_logits_command(app, exit_code);
  add_generate_command(app, exit_code);
  add_perplexity_command(app, exit_code);
  add_score_command(app, exit_code);
  add_serve_command(app, exit_code);
  add_jobs_command(app, exit_code);
  add_grammar_command(app, exit_code);
  add_pull_command(app, exit_code);
  add_run_command(app, exit_code);
  add_ps_command(app, exit_code);
  add_worker_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  return exit_code;
}
