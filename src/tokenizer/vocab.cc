// SPDX-License-Identifier: Apache-2.0
#include "tokenizer/vocab.h"

namespace synapse::tokenizer {

TokenId Vocab::add(Token token) {
  const auto id = static_cast<TokenId>(tokens_.size());
  by_text_.try_emplace(token.text, id);
  tokens_.push_back(std::move(token));
  return id;
}

}  // namespace synapse::tokenizer
