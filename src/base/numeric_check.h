// SPDX-License-Identifier: Apache-2.0
// The last gate before numbers leave the service: a NaN or an infinity in an output (an embedding,
// a rerank score) means the model or a kernel is broken, and JSON would carry it as `null` with
// status 200. Every output vector goes through check_finite, as the sampler checks logits, so all
// routes answer the same 500 numeric_fault.
#pragma once

#include <span>
#include <string_view>

#include "base/status.h"

namespace synapse {

// numeric_fault naming `what` and the first bad element when `values` holds a NaN or an infinity.
Status check_finite(std::span<const float> values, std::string_view what);

}  // namespace synapse
