// SPDX-License-Identifier: Apache-2.0
#include "hub/gguf_join.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "hub/test_gguf.h"
#include "tests/support/test_support.h"

namespace synapse::hub {
namespace {

void write_text(const std::string& path, const std::string& bytes) {
  synapse::testing::write_file_bytes(path, std::vector<uint8_t>(bytes.begin(), bytes.end()));
}

TEST(GgufJoin, JoinsASplitSetIntoTheUnsplitFile) {
  synapse::testing::TempDir dir;
  const std::vector<std::string> parts = {dir.file("m-00001-of-00002.gguf"),
                                          dir.file("m-00002-of-00002.gguf")};
  write_text(parts[0], testing::test_gguf(5, 0, 2, 0, 2));
  write_text(parts[1], testing::test_gguf(5, 2, 3, 1, 2));
  ASSERT_TRUE(join_gguf_splits(parts, dir.file("joined.gguf"), nullptr).ok());
  const std::string whole = testing::test_gguf(5);
  EXPECT_EQ(synapse::testing::read_file_bytes(dir.file("joined.gguf")),
            std::vector<uint8_t>(whole.begin(), whole.end()))
      << "the join is what llama.cpp would have written unsplit";
}

TEST(GgufJoin, RefusesIncompleteOrMisorderedSets) {
  synapse::testing::TempDir dir;
  const std::string a = dir.file("a.gguf"), b = dir.file("b.gguf"), c = dir.file("c.gguf");
  write_text(a, testing::test_gguf(5, 0, 2, 0, 2));
  write_text(b, testing::test_gguf(5, 2, 3, 1, 2));
  write_text(c, testing::test_gguf(5));
  const std::string out = dir.file("out.gguf");
  EXPECT_EQ(join_gguf_splits(std::vector<std::string>{b, a}, out, nullptr).code(),
            ErrorCode::kBadValue);
  EXPECT_EQ(join_gguf_splits(std::vector<std::string>{a}, out, nullptr).code(),
            ErrorCode::kBadValue);
  EXPECT_EQ(join_gguf_splits(std::vector<std::string>{a, c}, out, nullptr).code(),
            ErrorCode::kBadValue);
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
}  // namespace synapse::hub
