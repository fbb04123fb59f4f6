// SPDX-License-Identifier: Apache-2.0
// What speculative decoding asks of a drafter: a cheap guess at the next few tokens, which the
// target model then checks all at once (speculative_decoder.h). A guess costs a verification row
// when wrong and saves a whole decode step when right; it never changes what is generated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"

namespace synapse {

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Up to max_tokens tokens likely to follow `context` (the prompt and every token generated so
  // far) into `draft`, cleared first. Proposing none is allowed (the step then decodes one token).
  virtual Status propose(std::span<const int32_t> context, size_t max_tokens,
                         std::vector<int32_t>& draft) = 0;
};

}  // namespace synapse
