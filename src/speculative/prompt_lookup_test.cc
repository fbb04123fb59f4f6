// SPDX-License-Identifier: Apache-2.0
#include "speculative/prompt_lookup.h"

#include <gtest/gtest.h>

namespace synapse {
namespace {

std::vector<int32_t> propose(PromptLookupDrafter& d, const std::vector<int32_t>& context,
                             size_t max_tokens) {
  std::vector<int32_t> draft = {99};  // cleared by propose
  EXPECT_TRUE(d.propose(context, max_tokens, draft).ok());
  return draft;
}

TEST(PromptLookup, ProposesWhatFollowedTheMostRecentLongestMatch) {
  PromptLookupDrafter d;
  // The suffix 5 6 7 occurred twice; the later occurrence (followed by 8 9) wins over the earlier
  // (followed by 1 2), and a longer match wins over a shorter, more recent one.
  const std::vector<int32_t> context = {5, 6, 7, 1, 2, 3, 5, 6, 7, 8, 9, 4, 6, 7, 0, 5, 6, 7};
  EXPECT_EQ(propose(d, context, 8), (std::vector<int32_t>{8, 9, 4, 6, 7, 0, 5, 6}));
  EXPECT_EQ(propose(d, context, 3), (std::vector<int32_t>{8, 9, 4}));
  // No more than what follows the match: "4 1 2" never occurred, "1 2" did, with 4 tokens after.
  const std::vector<int32_t> tail = {1, 2, 3, 4, 1, 2};
  EXPECT_EQ(propose(d, tail, 10), (std::vector<int32_t>{3, 4, 1, 2}));
}

TEST(PromptLookup, FallsBackToShorterSuffixesDownToTheMinimum) {
  PromptLookupDrafter d(PromptLookupOptions{.ngram_max = 3, .ngram_min = 2});
  // 3 tokens "9 4 5" never occurred, "4 5" did.
  EXPECT_EQ(propose(d, {4, 5, 6, 1, 9, 4, 5}, 2), (std::vector<int32_t>{6, 1}));
  // Only the last token matches: below ngram_min, no draft.
  EXPECT_TRUE(propose(d, {4, 5, 6, 1, 9, 8, 5}, 4).empty());
  PromptLookupDrafter single(PromptLookupOptions{.ngram_max = 3, .ngram_min = 1});
  EXPECT_EQ(propose(single, {4, 5, 6, 1, 9, 8, 5}, 4), (std::vector<int32_t>{6, 1, 9, 8}));
}

TEST(PromptLookup, NothingToProposeIsAnEmptyDraft) {
  PromptLookupDrafter d;
  EXPECT_TRUE(propose(d, {}, 4).empty());
  EXPECT_TRUE(propose(d, {7}, 4).empty());
  EXPECT_TRUE(propose(d, {1, 2, 3, 4, 5}, 4).empty());
  EXPECT_TRUE(propose(d, {1, 2, 1, 2}, 0).empty());
  // A run of one token proposes more of it (the occurrence may overlap the suffix).
  EXPECT_EQ(propose(d, {3, 3, 3, 3}, 4), (std::vector<int32_t>{3}));
}

TEST(PromptLookup, ALongerContinuationBeatsAShortMostRecentOne) {
  PromptLookupDrafter d;
  // In a loop the most recent occurrence of the suffix is right before it, with one token after.
  EXPECT_EQ(propose(d, std::vector<int32_t>(10, 3), 4), (std::vector<int32_t>{3, 3, 3, 3}));
  // 1 2 3 occurred twice before the suffix: the most recent is followed by four tokens, the
  // older by eleven. Up to four wanted, the most recent wins; with six the older one does.
  const std::vector<int32_t> twice = {1, 2, 3, 7, 8, 9, 0, 1, 2, 3, 4, 1, 2, 3};
  EXPECT_EQ(propose(d, twice, 2), (std::vector<int32_t>{4, 1}));
  EXPECT_EQ(propose(d, twice, 3), (std::vector<int32_t>{4, 1, 2}));
  EXPECT_EQ(propose(d, twice, 6), (std::vector<int32_t>{7, 8, 9, 0, 1, 2}));
}

}  // namespace
}  // namespace synapse
