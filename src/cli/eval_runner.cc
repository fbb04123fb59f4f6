// SPDX-License-Identifier: Apache-2.0
#include "cli/eval_runner.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace synapse::cli {

EngineScorer::EngineScorer(DecoderModel& model, size_t n_ctx, size_t max_sequences,
                           size_t batch_tokens) {
  EngineConfig config;
  config.max_batch_tokens = std::max<size_t>(1, batch_tokens);
  const size_t pages_per_sequence = (n_ctx + config.kv.page_tokens - 1) / config.kv.page_tokens;
  config.kv.max_pages = std::max<size_t>(1, max_sequences) * pages_per_sequence;
  engine_ = std::make_unique<Engine>(model, config);
}

ChunkScorer EngineScorer::scorer() {
  return [this](std::span<const std::vector<int32_t>> chunks, size_t first_row, size_t n_rows,
                std::span<float> logits) -> Status {
    std::vector<StepInput> inputs;
    inputs.reserve(chunks.size());
    for (const auto& chunk : chunks) {
      // Only the scored rows need the output head.
      StepInput input{engine_->new_sequence(), chunk, LogitsWanted::kAll};
      input.logits_from = first_row;
      inputs.push_back(input);
    }
    Status status = engine_->step(inputs, out_);
    for (const StepInput& input : inputs) (void)engine_->release(input.sequence);
    SYN_RETURN_IF_ERROR(status);
    const size_t n_vocab = out_.n_logits;
    for (size_t c = 0; c < chunks.size(); ++c) {
      const float* from = out_.logits.data() + out_.first_row[c] * n_vocab;
      std::memcpy(logits.data() + c * n_rows * n_vocab, from, n_rows * n_vocab * sizeof(float));
    }
    return ok_status();
  };
}

Result<std::string> read_text_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return Status(ErrorCode::kIoError, "cannot read the text file", ErrorWhere{.path = path});
  }
  std::string text;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) text.append(buffer, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) {
    return Status(ErrorCode::kIoError, "error reading the text file", ErrorWhere{.path = path});
  }
  if (text.empty()) {
    return Status(ErrorCode::kInvalidArgument, "the text file is empty", ErrorWhere{.path = path});
  }
  return text;
}

}  // namespace synapse::cli
