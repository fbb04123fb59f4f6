// SPDX-License-Identifier: Apache-2.0
// A model opened for embedding on its own: its thread pool, CPU backend, loaded model,
// tokenizer, Engine and the Embedder over them, owned together (the CLI's `embed` and `rerank`,
// the encoder executor of `synapse serve`, tests). Serving code that already has an Engine uses
// Embedder directly.
#pragma once

#include <memory>

#include "backend/cpu_backend.h"
#include "base/thread_pool.h"
#include "encoder/embedder.h"
#include "format/model_file.h"
#include "model/decoder.h"
#include "runtime/engine.h"
#include "tokenizer/tokenizer.h"

namespace synapse {

class EmbeddingRuntime {
 public:
  // Loads `file` with `options` (serving code passes serve::serving_decoder_options(), so the
  // vectors do not depend on how inputs are batched) on `threads` threads.
  static Result<std::unique_ptr<EmbeddingRuntime>> open(std::unique_ptr<ModelFile> file,
                                                        int threads, const DecoderOptions& options);

  Embedder& embedder() { return *embedder_; }
  const DecoderModel& model() const { return *model_; }
  const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }
  size_t n_ctx() const { return engine_->cache().n_ctx(); }

 private:
  EmbeddingRuntime(int threads, tokenizer::Tokenizer tokenizer);

  ThreadPool pool_;
  CpuBackend backend_;
  tokenizer::Tokenizer tokenizer_;
  std::unique_ptr<DecoderModel> model_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Embedder> embedder_;
};

}  // namespace synapse
