// SPDX-License-Identifier: Apache-2.0
// Test-only fault injection: named integer knobs set through the environment, e.g.
// SYNAPSE_FAIL_POINTS="http.write_delay_ms=200", read once at first use. A test sets them to make
// a race happen every time (a slow writer during shutdown) instead of hoping load finds it. Unset
// points are 0; production never sets the variable, and a lookup is one hash-map read.
#pragma once

#include <cstdint>
#include <string_view>

namespace synapse {

int64_t fail_point(std::string_view name);

}  // namespace synapse
