// SPDX-License-Identifier: Apache-2.0
#include "kernels/thread_scratch.h"

#include <memory>
#include <new>

namespace synapse {
namespace {

struct AlignedFree {
  void operator()(uint8_t* p) const { ::operator delete[](p, std::align_val_t{64}); }
};

}  // namespace

uint8_t* thread_scratch(size_t bytes) {
  thread_local std::unique_ptr<uint8_t[], AlignedFree> buffer;
  thread_local size_t capacity = 0;
  if (bytes > capacity) {
    buffer.reset(static_cast<uint8_t*>(::operator new[](bytes, std::align_val_t{64})));
    capacity = bytes;
  }
  return buffer.get();
}

}  // namespace synapse
