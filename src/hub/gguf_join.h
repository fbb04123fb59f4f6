// SPDX-License-Identifier: Apache-2.0
// Joins the parts of a GGUF split by llama.cpp's gguf-split into one GGUF, as `gguf-split
// --merge` does. Each part is a valid GGUF holding some of the tensors; the first carries all of
// the model's metadata, every part carries split.no (u16, 0-based), split.count (u16) and
// split.tensors.count (i32, the total). The joined file has the first part's metadata without the
// split.* keys and every part's tensors in order, laid out by GgufWriter.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "base/status.h"

namespace synapse::hub {

inline constexpr std::string_view kSplitNoKey = "split.no";
inline constexpr std::string_view kSplitCountKey = "split.count";
inline constexpr std::string_view kSplitTensorsCountKey = "split.tensors.count";

// Checks that `parts` (in order) are one complete split set and writes the joined GGUF to
// `output` (atomically).
Status join_gguf_splits(std::span<const std::string> parts, const std::string& output,
                        const std::function<void(uint64_t done, uint64_t total)>& progress);

}  // namespace synapse::hub
