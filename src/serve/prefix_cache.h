// SPDX-License-Identifier: Apache-2.0
// The prefix cache: KV sequences of recently finished requests, kept so that a new prompt that
// starts with the same tokens forks one (its pages shared copy-on-write) and prefills only the
// rest. Pure bookkeeping over sequence ids and token lists; the engine loop does the forking,
// truncating and releasing. Evicted least recently used first: when there are more than
// `max_entries`, or when the KV pool is short of pages.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "runtime/kv_cache.h"

namespace synapse::serve {

class PrefixCache {
 public:
  struct Entry {
    SeqId sequence = 0;
    std::vector<int32_t> tokens;  // exactly the tokens whose KV the sequence holds
    uint64_t last_used = 0;
  };
  struct Match {
    size_t index = 0;   // entry index, valid until the cache changes
    size_t common = 0;  // tokens shared with the prompt, from the start
  };

  explicit PrefixCache(size_t max_entries) : max_entries_(max_entries) {}

  // The entry sharing the longest prefix with `prompt` (ties: the most recently used); nullopt
  // when none shares at least `min_tokens` (>= 1).
  std::optional<Match> longest_match(std::span<const int32_t> prompt, size_t min_tokens) const;
  // Adds a sequence; appends to `evicted` the sequences pushed out by max_entries (to release).
  // With max_entries 0 the sequence itself is returned in `evicted`.
  void insert(SeqId sequence, std::vector<int32_t> tokens, uint64_t now,
              std::vector<SeqId>& evicted);
  void touch(size_t index, uint64_t now) { entries_[index].last_used = now; }
  // Removes and returns an entry (its sequence now belongs to the caller).
  Entry take(size_t index);
  // Removes the least recently used entry and returns its sequence (to release); nullopt if empty.
  std::optional<SeqId> evict_lru();

  size_t size() const { return entries_.size(); }
  const Entry& entry(size_t index) const { return entries_[index]; }

 private:
  size_t max_entries_;
  std::vector<Entry> entries_;
};

}  // namespace synapse::serve
