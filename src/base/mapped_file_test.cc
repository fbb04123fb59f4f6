// SPDX-License-Identifier: Apache-2.0
#include "base/mapped_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "tests/support/test_support.h"

namespace synapse {
namespace {

TEST(MappedFile, MapsContents) {
  testing::TempDir dir;
  testing::write_file_bytes(dir.file("a.bin"), {1, 2, 3, 4, 5});
  Result<MappedFile> file = MappedFile::open(dir.file("a.bin"));
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  ASSERT_EQ(file->size(), 5u);
  EXPECT_EQ(file->bytes()[0], 1);
  EXPECT_EQ(file->bytes()[4], 5);
  file->advise(AccessHint::kSequential);
  file->advise(AccessHint::kWillNeed, 3, 100);  // clipped to the file
  file->advise(AccessHint::kRandom, 1000);      // past the end: ignored

  MappedFile moved = std::move(file).value();
  EXPECT_EQ(moved.size(), 5u);
  EXPECT_EQ(moved.bytes()[2], 3);
  EXPECT_EQ(moved.path(), dir.file("a.bin"));
}

TEST(MappedFile, ReleasesOnlyThePagesWhollyInsideARange) {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  testing::TempDir dir;
  testing::write_file_bytes(dir.file("pages"), std::vector<uint8_t>(4 * page, 7));
  Result<MappedFile> file = MappedFile::open(dir.file("pages"));
  ASSERT_TRUE(file.ok());
  const uint8_t* base = file->bytes().data();
  const auto touch_all = [&] {
    unsigned sum = 0;
    for (size_t i = 0; i < 4 * page; i += page) sum += base[i];
    EXPECT_EQ(sum, 28u);
  };
  touch_all();
  ASSERT_EQ(testing::resident_pages(base, base + 4 * page), 4);
  // From inside page 0 to inside page 3: pages 1 and 2 go, the two it only touches stay.
  file->release_pages_within(file->bytes().subspan(100, 3 * page));
  EXPECT_EQ(testing::resident_pages(base, base + page), 1);
  EXPECT_EQ(testing::resident_pages(base + page, base + 3 * page), 0);
  EXPECT_EQ(testing::resident_pages(base + 3 * page, base + 4 * page), 1);
  touch_all();  // released pages read again from the page cache, unchanged
  // Ranges not inside the mapping are ignored.
  const std::vector<uint8_t> elsewhere(2 * page);
  file->release_pages_within(elsewhere);
  file->release_pages_within(std::span(base + 3 * page, 2 * page));
  EXPECT_EQ(testing::resident_pages(base, base + 4 * page), 4);
}

TEST(MappedFile, EmptyFileMapsToEmptySpan) {
  testing::TempDir dir;
  testing::write_file_bytes(dir.file("empty"), {});
  Result<MappedFile> file = MappedFile::open(dir.file("empty"));
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->size(), 0u);
  EXPECT_TRUE(file->bytes().empty());
}

TEST(MappedFile, RefusesMissingFilesDirectoriesAndFifos) {
  testing::TempDir dir;
  EXPECT_EQ(MappedFile::open(dir.file("missing")).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(MappedFile::open(dir.path()).status().code(), ErrorCode::kInvalidArgument);
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  // Opening a FIFO for reading would block without O_NONBLOCK... it must be refused, not hang.
  const Result<MappedFile> fifo = MappedFile::open(dir.file("fifo"));
  EXPECT_EQ(fifo.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(fifo.status().where().path, dir.file("fifo"));
}

}  // namespace
}  // namespace synapse
