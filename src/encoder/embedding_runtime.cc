// SPDX-License-Identifier: Apache-2.0
#include "encoder/embedding_runtime.h"

#include <algorithm>

#include "kernels/kernel_selection.h"

namespace synapse {

EmbeddingRuntime::EmbeddingRuntime(int threads, tokenizer::Tokenizer tokenizer)
    : pool_(std::max(1, threads)),
      backend_(selected_kernels(), pool_),
      tokenizer_(std::move(tokenizer)) {}

Result<std::unique_ptr<EmbeddingRuntime>> EmbeddingRuntime::open(std::unique_ptr<ModelFile> file,
                                                                 int threads,
                                                                 const DecoderOptions& options) {
  auto tok = tokenizer::Tokenizer::from_gguf(file->metadata());
  if (!tok.ok()) return std::move(tok).take_status().with_path(file->path());
  std::unique_ptr<EmbeddingRuntime> r(new EmbeddingRuntime(threads, std::move(tok).value()));
  SYN_ASSIGN_OR_RETURN(r->model_, DecoderModel::load(std::move(file), r->backend_, options));
  r->engine_ = std::make_unique<Engine>(*r->model_);
  r->embedder_ = std::make_unique<Embedder>(*r->engine_, r->tokenizer_);
  return r;
}

}  // namespace synapse
