// SPDX-License-Identifier: Apache-2.0
// Scratch memory of the calling thread, for kernels that need more than their caller hands them
// (the interleaved layouts' rows restored to their stored order). Compiled without ISA flags: an
// ISA translation unit that kept its own std::vector would emit weak symbols (see
// check_isa_symbols.cmake).
#pragma once

#include <cstddef>
#include <cstdint>

namespace synapse {

// At least `bytes` bytes, 64-byte aligned, valid on this thread until its next call here; grown
// on demand, kept for the thread's life.
uint8_t* thread_scratch(size_t bytes);

}  // namespace synapse
