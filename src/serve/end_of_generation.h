// SPDX-License-Identifier: Apache-2.0
// Which tokens end a generation by default: what `synapse generate`, `synapse serve` and its
// workers give a request that names none (ServiceConfig::eog_tokens).
#pragma once

#include <cstdint>
#include <vector>

#include "model/decoder.h"

namespace synapse::serve {

// EOS, EOT and EOM ids named by the file's metadata (those inside the vocabulary).
std::vector<int32_t> end_of_generation_tokens(const DecoderModel& model);

}  // namespace synapse::serve
