// SPDX-License-Identifier: Apache-2.0
// What `synapse embed` and `synapse rerank` share: opening a model (an encoder or a decoder) for
// embedding from a model reference (path, package or stored name, leased while the command
// runs), reading inputs one per line, and the thread-count option.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "encoder/embedding_runtime.h"
#include "store/model_store.h"

namespace synapse::cli {

struct OpenedEmbedder {
  std::unique_ptr<EmbeddingRuntime> runtime;
  std::optional<ModelLease> lease;
  std::string label;  // for output: the path or "name (sha256:...)"
};

// Opens any model (an encoder or a decoder) for embedding, with serve::serving_decoder_options(),
// so its vectors are those `synapse serve` answers.
Result<OpenedEmbedder> open_embedder(const std::string& ref, const std::string& store, int threads);

// Embeds `inputs` with whatever the model is (open_embedder). Sets `label` for output.
Result<EmbedResult> embed_with_model(const std::string& ref, const std::string& store, int threads,
                                     std::span<const std::string> inputs,
                                     const EmbedOptions& options, std::string& label);

// The non-empty lines of a file ("-" reads stdin), without their line ends.
Result<std::vector<std::string>> read_lines(const std::string& path);

// -t/--threads (default: the machine's hardware threads).
void add_threads_option(CLI::App* cmd, int& threads);

}  // namespace synapse::cli
