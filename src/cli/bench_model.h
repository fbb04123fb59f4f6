// SPDX-License-Identifier: Apache-2.0
// The model benchmark of `synapse bench -m MODEL` (prompt processing and generation speed).
#pragma once

#include <CLI/CLI.hpp>

#include "cli/model_runner.h"

namespace synapse::cli {

struct ModelBenchOptions {
  RunOptions run;
  int n_prompt = 512;
  int n_gen = 128;
  int depth = 0;  // tokens already in the context (untimed) before each test, as llama-bench -d
  int repetitions = 3;
  int batch = 512;
  bool json = false;
};

void add_model_bench_options(CLI::App* cmd, ModelBenchOptions& options);
int run_model_bench(const ModelBenchOptions& options);

}  // namespace synapse::cli
