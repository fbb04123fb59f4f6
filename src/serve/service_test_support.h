// SPDX-License-Identifier: Apache-2.0
// What the Service tests share: a model opened for serving, a small service configuration whose
// prompts run in several chunks and pages, and a greedy request. Tests only.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/cpu_backend.h"
#include "kernels/kernel_selection.h"
#include "serve/service.h"
#include "synth/synth_model.h"
#include "tests/support/test_support.h"
#include "tokenizer/tokenizer.h"

namespace synapse::serve {

// A test fixture holding a synthetic model opened as `synapse serve` opens it
// (serving_decoder_options, its own pool and CPU backend) with its tokenizer.
class ServingModelTest : public ::testing::Test {
 protected:
  // Writes the model `o` describes to path_ and opens it.
  void open_synthetic(const SynthOptions& o) {
    path_ = dir_.file(o.arch + ".gguf");
    const Status written = synthesize_model(o, path_);
    ASSERT_TRUE(written.ok()) << written.to_string();
    pool_ = std::make_unique<ThreadPool>(2);
    backend_ = std::make_unique<CpuBackend>(selected_kernels(), *pool_);
    auto model = DecoderModel::open(path_, *backend_, serving_decoder_options());
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    model_ = std::move(*model);
    auto tok = tokenizer::Tokenizer::from_gguf(model_->file().metadata());
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    tokenizer_ = std::make_unique<tokenizer::Tokenizer>(std::move(*tok));
  }

  // The last event of a request (its final one).
  static GenerationEvent final_event(RequestHandle& h) {
    GenerationEvent e, last;
    while (h.next(e)) last = e;
    return last;
  }

  testing::TempDir dir_;
  std::string path_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<CpuBackend> backend_;
  std::unique_ptr<DecoderModel> model_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
};

// Small KV pages and 16-row prompt chunks, so the tests' prompts cross chunk and page bounds.
inline ServiceConfig small_service_config(size_t parallel, size_t cached = 0) {
  ServiceConfig config;
  config.scheduler.max_active = parallel;
  config.max_cached_sequences = cached;
  config.min_prefix_reuse_tokens = 4;
  config.prefill_chunk_tokens = 16;
  config.page_tokens = 8;
  return config;
}

inline GenerationRequest greedy_request(std::vector<int32_t> prompt, int32_t max_tokens,
                                        RequestClass c = RequestClass::kInteractive) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0.0f;
  r.request_class = c;
  return r;
}

}  // namespace synapse::serve
