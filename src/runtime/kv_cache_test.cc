// SPDX-License-Identifier: Apache-2.0
#include "runtime/kv_cache.h"

#include <gtest/gtest.h>

#include <cstring>

#include "backend/cpu_backend.h"
#include "kernels/kernel_selection.h"

namespace synapse {
namespace {

class KvCacheTest : public ::testing::Test {
 protected:
  ThreadPool pool_{1};
  CpuBackend backend_{selected_kernels(), pool_};
  KvFormat format_{4, 2, 8, TensorType::kF32};  // 4 tokens per page
  KvCacheConfig config_{.page_tokens = 4, .max_pages = 8, .pages_per_chunk = 2};
};

TEST_F(KvCacheTest, GrowsOnDemandInChunks) {
  KvCache cache(backend_, format_, 3, 64, config_);
  EXPECT_EQ(cache.stats().pages_allocated, 0u);
  const SeqId s = cache.create();
  ASSERT_TRUE(cache.reserve(s, 5).ok());
  cache.commit(s, 5);
  EXPECT_EQ(cache.n_tokens(s), 5u);
  EXPECT_EQ(cache.stats().pages_in_use, 2u);
  EXPECT_EQ(cache.stats().pages_allocated, 2u);
  EXPECT_EQ(cache.layer_views(s)[2].n_pages, 2u);
  ASSERT_TRUE(cache.reserve(s, 3).ok());  // still in page 2
  EXPECT_EQ(cache.stats().pages_in_use, 2u);
  ASSERT_TRUE(cache.release(s).ok());
  EXPECT_EQ(cache.stats().pages_in_use, 0u);
}

TEST_F(KvCacheTest, ContextOverflowAndExhaustionAreErrors) {
  KvCache cache(backend_, format_, 1, 16, config_);
  const SeqId a = cache.create();
  const Status overflow = cache.reserve(a, 17);
  EXPECT_EQ(overflow.code(), ErrorCode::kLimitExceeded);
  EXPECT_EQ(cache.stats().pages_in_use, 0u);
  const SeqId b = cache.create(), c = cache.create();
  ASSERT_TRUE(cache.reserve(a, 16).ok());
  ASSERT_TRUE(cache.reserve(b, 16).ok());
  const Status exhausted = cache.reserve(c, 1);
  EXPECT_EQ(exhausted.code(), ErrorCode::kResourceExhausted) << exhausted.to_string();
  EXPECT_EQ(cache.stats().pages_in_use, 8u);
}

TEST_F(KvCacheTest, ForkSharesPagesAndCopiesOnWrite) {
  KvCache cache(backend_, format_, 2, 64, config_);
  const SeqId a = cache.create();
  ASSERT_TRUE(cache.reserve(a, 6).ok());
  // Mark token 5 of layer 1's K in a's second page.
  const size_t slot = 1 * format_.token_bytes();
  uint8_t* k1 = cache.layer_views(a)[1].k_pages[1];
  std::memset(k1 + slot, 0x5a, format_.token_bytes());
  cache.commit(a, 6);

  Result<SeqId> b = cache.fork(a);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(cache.n_tokens(*b), 6u);
  EXPECT_EQ(cache.stats().pages_in_use, 2u);
  EXPECT_EQ(cache.stats().pages_shared, 2u);
  EXPECT_EQ(cache.layer_views(*b)[1].k_pages[1], k1);

  // b writes token 6 (page 1, shared): that page is copied, page 0 stays shared.
  ASSERT_TRUE(cache.reserve(*b, 1).ok());
  EXPECT_EQ(cache.stats().copies_on_write, 1u);
  EXPECT_EQ(cache.stats().pages_shared, 1u);
  uint8_t* copy = cache.layer_views(*b)[1].k_pages[1];
  EXPECT_NE(copy, k1);
  EXPECT_EQ(copy[slot], 0x5a);
  EXPECT_EQ(cache.layer_views(*b)[0].k_pages[0], cache.layer_views(a)[0].k_pages[0]);
  ASSERT_TRUE(cache.release(a).ok());
  EXPECT_EQ(cache.stats().pages_shared, 0u);
  EXPECT_EQ(cache.stats().pages_in_use, 2u);
}

TEST_F(KvCacheTest, TruncateReleasesPages) {
  KvCache cache(backend_, format_, 1, 64, config_);
  const SeqId a = cache.create();
  ASSERT_TRUE(cache.reserve(a, 12).ok());
  cache.commit(a, 12);
  cache.truncate(a, 5);
  EXPECT_EQ(cache.n_tokens(a), 5u);
  EXPECT_EQ(cache.stats().pages_in_use, 2u);
}

}  // namespace
}  // namespace synapse
