// SPDX-License-Identifier: Apache-2.0
// What the Service tests share: a small service configuration whose prompts run in several
// chunks and pages, and a greedy request. Tests only.
#pragma once

#include <memory>
#include <vector>

#include "serve/service.h"

namespace synapse::serve {

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
