// SPDX-License-Identifier: Apache-2.0
#include "constrain/state_mask_cache.h"

#include <bit>

namespace synapse::constrain {

void SharedStateMasks::find_few() {
  size_t count = 0;
  for (const uint64_t w : within) count += static_cast<size_t>(std::popcount(w));
  few.clear();
  sparse = count <= kFew;
  if (!sparse) return;
  for (size_t i = 0; i < within.size(); ++i) {
    for (uint64_t w = within[i]; w != 0; w &= w - 1) {
      few.push_back(static_cast<uint32_t>(i * 64 + static_cast<size_t>(std::countr_zero(w))));
    }
  }
}

size_t StateMaskCache::KeyHash::operator()(const Key& key) const {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ key.size();
  for (const uint64_t x : key) h = (h ^ x) * 0x100000001b3ull + (h >> 31);
  return static_cast<size_t>(h);
}

std::shared_ptr<const SharedStateMasks> StateMaskCache::find(const Key& key) const {
  std::lock_guard lock(mu_);
  const auto found = entries_.find(key);
  return found == entries_.end() ? nullptr : found->second;
}

void StateMaskCache::insert(const Key& key, std::shared_ptr<const SharedStateMasks> masks) {
  std::lock_guard lock(mu_);
  if (entries_.size() >= kMaxEntries) entries_.clear();
  entries_.emplace(key, std::move(masks));
}

size_t StateMaskCache::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

}  // namespace synapse::constrain
