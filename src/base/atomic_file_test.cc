// SPDX-License-Identifier: Apache-2.0
#include "base/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/support/test_support.h"

namespace synapse {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> bytes_of(std::string_view text) { return {text.begin(), text.end()}; }

TEST(AtomicFile, NothingIsVisibleUntilCommit) {
  testing::TempDir dir;
  const std::string path = dir.file("out.bin");
  {
    Result<AtomicFile> file = AtomicFile::create(path);
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    ASSERT_TRUE(file->write(bytes_of("hello world")).ok());
    ASSERT_TRUE(file->write_zeros(3).ok());
    ASSERT_TRUE(file->write_at(0, bytes_of("HELLO")).ok());
    EXPECT_EQ(file->bytes_written(), 14u);
    EXPECT_FALSE(fs::exists(path));
    EXPECT_TRUE(fs::exists(file->temp_path()));
    EXPECT_EQ(file->write_at(12, bytes_of("xyz")).code(), ErrorCode::kInternal) << "past the end";
    ASSERT_TRUE(file->commit().ok());
    EXPECT_FALSE(fs::exists(file->temp_path()));
  }
  const std::vector<uint8_t> expected = {'H', 'E', 'L', 'L', 'O', ' ', 'w',
                                         'o', 'r', 'l', 'd', 0,   0,   0};
  EXPECT_EQ(testing::read_file_bytes(path), expected);
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::others_read, fs::perms::others_read);
}

TEST(AtomicFile, AbandonedFilesAreRemovedAndTargetsKept) {
  testing::TempDir dir;
  const std::string path = dir.file("keep.bin");
  testing::write_file_bytes(path, bytes_of("old"));
  {
    Result<AtomicFile> file = AtomicFile::create(path);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE(file->write(std::vector<uint8_t>(3 << 20, 7)).ok());  // past the buffer
  }
  EXPECT_EQ(testing::read_file_bytes(path), bytes_of("old"));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1u);
}

TEST(AtomicFile, NamedLaterInAnotherDirectory) {
  testing::TempDir dir;
  fs::create_directories(dir.file("tmp"));
  Result<AtomicFile> file = AtomicFile::create_in(dir.file("tmp"), "stem");
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE(file->temp_path().starts_with(dir.file("tmp/stem.tmp.")));
  ASSERT_TRUE(file->write(bytes_of("data")).ok());
  ASSERT_TRUE(file->sync().ok());
  ASSERT_TRUE(file->rename_to(dir.file("final")).ok());
  EXPECT_EQ(testing::read_file_bytes(dir.file("final")), bytes_of("data"));
  EXPECT_EQ(AtomicFile::create_in(dir.file("missing"), "x").status().code(), ErrorCode::kIoError);
}

}  // namespace
}  // namespace synapse
