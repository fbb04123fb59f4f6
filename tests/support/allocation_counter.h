// SPDX-License-Identifier: Apache-2.0
// Counts a test binary's heap allocations. Linking the object library synapse_allocation_counter
// replaces the global operator new and delete, in every form and on every thread, with
// malloc-based ones that count. Not under ThreadSanitizer, whose runtime defines its own (the
// link fails), so tests that use it stay out of the `threads` label.
#pragma once

#include <cstddef>
#include <cstdint>

namespace synapse::testing {

// Calls of operator new (any form) since the process started.
uint64_t allocation_count();
// The largest single request to operator new since the last reset_largest_allocation().
size_t largest_allocation();
void reset_largest_allocation();

}  // namespace synapse::testing
