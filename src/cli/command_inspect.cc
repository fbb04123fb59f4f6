// SPDX-License-Identifier: Apache-2.0
// `synapse inspect FILE [--json]`: what a model file holds and whether it is valid.
#include <cstdio>

#include "cli/commands.h"
#include "cli/inspect_report.h"

namespace synapse::cli {

void add_inspect_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string path;
    bool json = false;
    bool all_tensors = false;
    size_t array_elements = 8;
  };
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "Validate a GGUF file and show its architecture, hyper-parameters, tokenizer, "
      "tensors and byte layout");
  cmd->add_option("file", options->path, "GGUF model file")->required();
  cmd->add_flag("--json", options->json, "Print one JSON object instead of text");
  cmd->add_flag("--all-tensors", options->all_tensors, "List every tensor (text output)");
  cmd->add_option("--array-elements", options->array_elements,
                  "How many elements of each metadata array to show")
      ->capture_default_str();
  cmd->callback([options, &exit_code] {
    const auto report = build_inspect_report(options->path, options->array_elements);
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
