// SPDX-License-Identifier: Apache-2.0
// Each `synapse <command>` registers itself on the CLI11 app; the command runs from the callback
// and stores its exit code in `exit_code`.
#pragma once

#include <CLI/CLI.hpp>

namespace synapse::cli {

void add_inspect_command(CLI::App& app, int& exit_code);
void add_synth_command(CLI::App& app, int& exit_code);
void add_doctor_command(CLI::App& app, int& exit_code);
void add_tokenize_command(CLI::App& app, int& exit_code);
void add_convert_command(CLI::App& app, int& exit_code);
void add_verify_command(CLI::App& app, int& exit_code);
void add_models_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_embed_command(CLI::App& app, int& exit_code);
void add_rerank_command(CLI::App& app, int& exit_code);
void add_logits_command(CLI::App& app, int& exit_code);
void add_generate_command(CLI::App& app, int& exit_code);
void add_perplexity_command(CLI::App& app, int& exit_code);
void add_score_command(CLI::App& app, int& exit_code);
void add_serve_command(CLI::App& app, int& exit_code);
void add_jobs_command(CLI::App& app, int& exit_code);
void add_grammar_command(CLI::App& app, int& exit_code);
void add_pull_command(CLI::App& app, int& exit_code);
void add_run_command(CLI::App& app, int& exit_code);
void add_ps_command(CLI::App& app, int& exit_code);
void add_worker_command(CLI::App& app, int& exit_code);

// "synapse 0.1.0 (commit ..., compiler ..., build ...)\ncpu: ..."
std::string version_text();

// Exit codes shared by all commands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // the command ran and found a problem, or could not run
inline constexpr int kExitUsage = 2;    // bad command line

}  // namespace synapse::cli
