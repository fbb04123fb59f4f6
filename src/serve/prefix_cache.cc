// SPDX-License-Identifier: Apache-2.0
#include "serve/prefix_cache.h"

#include <algorithm>

namespace synapse::serve {

std::optional<PrefixCache::Match> PrefixCache::longest_match(std::span<const int32_t> prompt,
                                                             size_t min_tokens) const {
  std::optional<Match> best;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const std::vector<int32_t>& t = entries_[i].tokens;
    const size_t n = std::min(t.size(), prompt.size());
    const size_t common = static_cast<size_t>(
        std::mismatch(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(n), prompt.begin()).first -
        t.begin());
    if (common < std::max<size_t>(min_tokens, 1)) continue;
    if (!best || common > best->common ||
        (common == best->common && entries_[i].last_used > entries_[best->index].last_used)) {
      best = Match{i, common};
    }
  }
  return best;
}

void PrefixCache::insert(SeqId sequence, std::vector<int32_t> tokens, uint64_t now,
                         std::vector<SeqId>& evicted) {
  if (max_entries_ == 0) {
    evicted.push_back(sequence);
    return;
  }
  while (entries_.size() >= max_entries_) evicted.push_back(*evict_lru());
  entries_.push_back(Entry{sequence, std::move(tokens), now});
}

PrefixCache::Entry PrefixCache::take(size_t index) {
  Entry e = std::move(entries_[index]);
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(index));
  return e;
}

std::optional<SeqId> PrefixCache::evict_lru() {
  if (entries_.empty()) return std::nullopt;
  const auto it =
      std::min_element(entries_.begin(), entries_.end(),
                       [](const Entry& a, const Entry& b) { return a.last_used < b.last_used; });
  const SeqId seq = it->sequence;
  entries_.erase(it);
  return seq;
}

}  // namespace synapse::serve
