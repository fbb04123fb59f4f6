// SPDX-License-Identifier: Apache-2.0
// Drafting with a smaller model of the same vocabulary: it decodes greedily ahead of the target.
// Its own sequence follows the context: each proposal keeps what it already holds of the context
// (the common prefix), drops the rest (the drafts the target rejected), runs the new tokens in one
// step and then decodes the draft token by token.
#pragma once

#include <memory>

#include "runtime/engine.h"
#include "speculative/drafter.h"

namespace synapse {

class DraftModelDrafter final : public Drafter {
 public:
  // `draft` must outlive the drafter; its vocabulary must be the target's (the caller checks).
  explicit DraftModelDrafter(DecoderModel& draft);
  Status propose(std::span<const int32_t> context, size_t max_tokens,
                 std::vector<int32_t>& draft) override;

 private:
  Engine engine_;
  Session session_;
  std::vector<int32_t> cached_;  // the tokens in session_, in order
};

}  // namespace synapse
