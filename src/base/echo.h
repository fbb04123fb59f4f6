// SPDX-License-Identifier: Apache-2.0
// How much of a caller's value an error message may repeat. Messages quote what was wrong ("the
// model 'x' does not exist"), but a 1 MB model name must not come back as a 1 MB error, be logged
// whole or fill a job's stored line errors; every quoted user value goes through clip_for_echo.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace synapse {

inline constexpr size_t kMaxEchoBytes = 128;

// `value` itself when it has at most `max_bytes` bytes; else its first `max_bytes` bytes, cut
// back to the start of a UTF-8 sequence so no character is split, followed by "…".
std::string clip_for_echo(std::string_view value, size_t max_bytes = kMaxEchoBytes);

}  // namespace synapse
