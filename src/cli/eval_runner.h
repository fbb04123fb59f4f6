// SPDX-License-Identifier: Apache-2.0
// Binds the eval layer's ChunkScorer to a loaded decoder: each chunk runs as its own fresh
// sequence on an Engine, all chunks of a call in one step (the engine splits it into forward
// passes of at most the batch size), and the wanted logit rows are copied out.
#pragma once

#include <cstdint>
#include <memory>

#include "eval/perplexity.h"
#include "runtime/engine.h"

namespace synapse::cli {

class EngineScorer {
 public:
  // `max_sequences` chunks of `n_ctx` tokens may run at once (sizes the KV pool).
  EngineScorer(DecoderModel& model, size_t n_ctx, size_t max_sequences, size_t batch_tokens);
  ChunkScorer scorer();
  Engine& engine() { return *engine_; }

 private:
  std::unique_ptr<Engine> engine_;
  StepOutput out_;
};

// Reads a whole text file; io_error naming the path, invalid_argument when it is empty.
Result<std::string> read_text_file(const std::string& path);

}  // namespace synapse::cli
