// SPDX-License-Identifier: Apache-2.0
// What `synapse embed` and `synapse rerank` share: opening an encoder model from a model
// reference (path, package or stored name, leased while the command runs), reading inputs one per
// line, and the thread-count option.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "encoder/embedder.h"
#include "store/model_store.h"

namespace synapse::cli {

struct OpenedEmbedder {
  std::unique_ptr<Embedder> embedder;
  std::optional<ModelLease> lease;
  std::string label;  // for output: the path or "name (sha256:...)"
};

Result<OpenedEmbedder> open_embedder(const std::string& ref, const std::string& store);

// The non-empty lines of a file ("-" reads stdin), without their line ends.
Result<std::vector<std::string>> read_lines(const std::string& path);

// -t/--threads (default: the machine's hardware threads).
void add_threads_option(CLI::App* cmd, int& threads);

}  // namespace synapse::cli
