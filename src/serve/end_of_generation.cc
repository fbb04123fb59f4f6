// SPDX-License-Identifier: Apache-2.0
#include "serve/end_of_generation.h"

namespace synapse::serve {

std::vector<int32_t> end_of_generation_tokens(const DecoderModel& model) {
  std::vector<int32_t> ids;
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.eom_token_id"}) {
    const Result<uint32_t> id = model.file().metadata().get_u32(key);
    if (id.ok() && *id < model.n_vocab()) ids.push_back(static_cast<int32_t>(*id));
  }
  return ids;
}

}  // namespace synapse::serve
