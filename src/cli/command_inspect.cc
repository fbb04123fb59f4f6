// SPDX-License-Identifier: Apache-2.0
// `synapse inspect MODEL [--json]`: what a model file (GGUF or package, or a stored model) holds
// and whether it is valid.
#include <cstdio>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/inspect_report.h"
#include "cli/model_runner.h"
#include "store/model_ref.h"

namespace synapse::cli {

void add_inspect_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string path;
    std::string store;
    bool json = false;
    bool all_tensors = false;
    size_t array_elements = 8;
    bool ir = false;
    uint32_t n_ctx = 0;
  };
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "Validate a model file (GGUF or .synapse package) and show its architecture, "
      "hyper-parameters, tokenizer, tensors and byte layout");
  cmd->add_option("model", options->path, "GGUF or package file, or a stored model's name")
      ->required();
  add_store_option(cmd, options->store);
  cmd->add_flag("--json", options->json, "Print one JSON object instead of text");
  cmd->add_flag("--all-tensors", options->all_tensors, "List every tensor (text output)");
  cmd->add_option("--array-elements", options->array_elements,
                  "How many elements of each metadata array to show")
      ->capture_default_str();
  cmd->add_flag("--ir", options->ir,
                "Print the verified Model IR and the execution plan (kernel per op) instead");
  cmd->add_option("--ctx", options->n_ctx, "Context for --ir (default: the model's, <= 4096)");
  cmd->callback([options, &exit_code] {
    if (options->ir) {
      RunOptions run;
      run.model = options->path;
      run.store = options->store;
      run.n_ctx = options->n_ctx;
      const Result<LoadedModel> loaded = load_model(run);
      if (!loaded.ok()) {
        exit_code = fail(loaded.status());
        return;
      }
      const DecoderModel& model = *loaded->model;
      std::fputs(format_plan(model.ir(), model.plan()).c_str(), stdout);
      exit_code = kExitOk;
      return;
    }
    // A stored model is leased while it is inspected.
    const Result<ResolvedModel> model =
        resolve_model(options->path, {.store_directory = options->store});
    const auto report = model.ok() ? build_inspect_report(model->path, options->array_elements)
                                   : inspect_error_report(options->path, model.status());
    if (options->json) {
      std::printf(
          "%s\n",
          report.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    } else {
      std::fputs(render_inspect_text(report, options->all_tensors).c_str(), stdout);
    }
    exit_code = report["valid"].get<bool>() ? kExitOk : kExitFailure;
  });
}

}  // namespace synapse::cli
