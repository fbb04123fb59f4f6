// SPDX-License-Identifier: Apache-2.0
// `synapse convert SRC.gguf -o OUT.synapse [--json]`: prepares a package from a GGUF, streaming
// the tensors (memory does not grow with the model), with a progress line on a terminal.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "format/package/package_writer.h"

namespace synapse::cli {

void add_convert_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string source;
    std::string output;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "convert",
      "Prepare a .synapse package from a GGUF model (tensor encodings kept as they are)");
  cmd->add_option("source", o->source, "GGUF model file")->required();
  cmd->add_option("-o,--output", o->output, "Package to write (.synapse)")->required();
  cmd->add_flag("--json", o->json, "Print the result as JSON");
  cmd->callback([o, &exit_code] {
    StageProgress progress(std::filesystem::path(o->source).filename().string());
    PackageWriteOptions options;
    options.created_by = created_by();
    options.progress = [&progress](uint64_t done, uint64_t total) {
      progress.update("converting", done, total);
    };
    const auto start = std::chrono::steady_clock::now();
    const auto written = convert_to_package(o->source, o->output, options);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!written.ok()) {
      exit_code = fail(written.status());
      return;
    }
    progress.finish();
    const double rate = megabytes_per_second(written->package_bytes, seconds);
    if (o->json) {
      const nlohmann::ordered_json out = {{"output", o->output},
                                          {"package_bytes", written->package_bytes},
                                          {"tensor_count", written->tensor_count},
                                          {"tensor_data_bytes", written->tensor_data_bytes},
                                          {"source_bytes", written->source_bytes},
                                          {"source_sha256", written->source_sha256},
                                          {"graph_sha256", written->graph_hash},
                                          {"seconds", seconds},
                                          {"mb_per_s", rate}};
      std::printf("%s\n", out.dump(2).c_str());
    } else {
      std::printf(
          "wrote %s: %zu tensors, %s in %.2f s (%.1f MB/s)\nsource sha256 %s\ngraph  sha256 %s\n",
          o->output.c_str(), written->tensor_count, human_bytes(written->package_bytes).c_str(),
          seconds, rate, written->source_sha256.c_str(), written->graph_hash.c_str());
    }
    exit_code = kExitOk;
  });
}

}  // namespace synapse::cli
