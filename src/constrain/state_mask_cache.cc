// SPDX-License-Identifier: Apache-2.0
#include "constrain/state_mask_cache.h"

#include <algorithm>
#include <bit>

namespace synapse::constrain {

void SharedStateMasks::compact() {
  if (sparse) return;
  size_t count = 0;
  for (const uint64_t w : within) count += static_cast<size_t>(std::popcount(w));
  if (count > kFew) return;
  few.clear();
  for (size_t i = 0; i < within.size(); ++i) {
    for (uint64_t w = within[i]; w != 0; w &= w - 1) {
      few.push_back(static_cast<uint32_t>(i * 64 + static_cast<size_t>(std::countr_zero(w))));
    }
  }
  std::vector<uint64_t>().swap(within);
  sparse = true;
}

void SharedStateMasks::copy_to(std::span<uint64_t> mask) const {
  if (!sparse) {
    std::copy(within.begin(), within.end(), mask.begin());
    return;
  }
  std::fill(mask.begin(), mask.end(), 0);
  or_into(mask);
}

void SharedStateMasks::or_into(std::span<uint64_t> mask) const {
  if (sparse) {
    for (const uint32_t t : few) mask[t >> 6] |= uint64_t{1} << (t & 63);
    return;
  }
  for (size_t w = 0; w < within.size(); ++w) mask[w] |= within[w];
}

size_t SharedStateMasks::bytes() const {
  size_t n = sizeof(*this) + within.size() * sizeof(uint64_t) + few.size() * sizeof(uint32_t);
  for (const SharedMaskGroup& g : groups) {
    n += sizeof(g) + g.before_path.size() + g.nodes.size() * sizeof(uint32_t);
  }
  return n;
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
  const size_t n = masks->bytes() + key.size() * sizeof(uint64_t);
  if (bytes_ + n > kMaxBytes) {
    entries_.clear();
    bytes_ = 0;
  }
  if (entries_.emplace(key, std::move(masks)).second) bytes_ += n;
}

size_t StateMaskCache::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

}  // namespace synapse::constrain
