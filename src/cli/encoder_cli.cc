// SPDX-License-Identifier: Apache-2.0
#include "cli/encoder_cli.h"

#include <fstream>
#include <iostream>
#include <thread>

#include "format/model_file.h"
#include "serve/service.h"
#include "store/model_ref.h"

namespace synapse::cli {

Result<OpenedEmbedder> open_embedder(const std::string& ref, const std::string& store,
                                     int threads) {
  // A GGUF runs as it is: embedding reads the weights in place, there is nothing to prepare.
  SYN_ASSIGN_OR_RETURN(ResolvedModel model, resolve_model(ref, {.store_directory = store}));
  SYN_ASSIGN_OR_RETURN(std::unique_ptr<ModelFile> file, open_model_file(model.path));
  // The serving options: the vectors are those `synapse serve` answers.
  SYN_ASSIGN_OR_RETURN(
      std::unique_ptr<EmbeddingRuntime> runtime,
      EmbeddingRuntime::open(std::move(file), threads, serve::serving_decoder_options()));
  return OpenedEmbedder{std::move(runtime), std::move(model.lease), model.label};
}

Result<EmbedResult> embed_with_model(const std::string& ref, const std::string& store, int threads,
                                     std::span<const std::string> inputs,
                                     const EmbedOptions& options, std::string& label) {
  SYN_ASSIGN_OR_RETURN(OpenedEmbedder opened, open_embedder(ref, store, threads));
  label = opened.label;
  return opened.runtime->embedder().embed(inputs, options);
}

Result<std::vector<std::string>> read_lines(const std::string& path) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) return Status(ErrorCode::kNotFound, "cannot open input", ErrorWhere{.path = path});
    in = &file;
  }
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(*in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

void add_threads_option(CLI::App* cmd, int& threads) {
  threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cmd->add_option("-t,--threads", threads, "Threads (default: all hardware threads)")
      ->check(CLI::Range(1, 1024));
}

}  // namespace synapse::cli
