// SPDX-License-Identifier: Apache-2.0
#include "serve/prefix_cache.h"

#include <gtest/gtest.h>

namespace synapse::serve {
namespace {

TEST(PrefixCache, LongestMatchAndLruEviction) {
  PrefixCache cache(2);
  std::vector<SeqId> evicted;
  cache.insert(7, {1, 2, 3, 4}, 1, evicted);
  cache.insert(8, {1, 2, 9}, 2, evicted);
  EXPECT_TRUE(evicted.empty());
  const std::vector<int32_t> prompt = {1, 2, 3, 5};
  auto m = cache.longest_match(prompt, 1);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(cache.entry(m->index).sequence, 7u);
  EXPECT_EQ(m->common, 3u);
  EXPECT_FALSE(cache.longest_match(prompt, 4).has_value());
  const std::vector<int32_t> other = {5, 1};
  EXPECT_FALSE(cache.longest_match(other, 1).has_value());
  // Touch 7; inserting a third evicts the least recently used (8).
  cache.touch(m->index, 3);
  cache.insert(9, {4}, 4, evicted);
  EXPECT_EQ(evicted, (std::vector<SeqId>{8}));
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(cache.evict_lru(), std::optional<SeqId>(7));
  const PrefixCache::Entry e = cache.take(0);
  EXPECT_EQ(e.sequence, 9u);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_FALSE(cache.evict_lru().has_value());
  // The longest match wins wherever it sits (above, it was also the first entry).
  PrefixCache later(3);
  std::vector<SeqId> none;
  later.insert(1, {1, 9}, 1, none);
  later.insert(2, {1, 2, 3}, 2, none);
  const auto longest = later.longest_match(prompt, 1);
  ASSERT_TRUE(longest.has_value());
  EXPECT_EQ(later.entry(longest->index).sequence, 2u);
  EXPECT_EQ(longest->common, 3u);
}

TEST(PrefixCache, DisabledReturnsTheSequence) {
  PrefixCache cache(0);
  std::vector<SeqId> evicted;
  cache.insert(3, {1}, 1, evicted);
  EXPECT_EQ(evicted, (std::vector<SeqId>{3}));
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace synapse::serve
