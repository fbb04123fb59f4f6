// SPDX-License-Identifier: Apache-2.0
#include "eval/reference_logits_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace synapse {
namespace {

namespace fs = std::filesystem;

class ReferenceLogitsFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("synapse_kld_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    header_.n_vocab = 11;
    header_.n_ctx = 8;
    header_.n_chunks = 3;
    header_.first_row = 4;
    header_.n_rows = 3;
    header_.add_bos = true;
    header_.bos_id = 1;
    header_.n_tokens = 26;
    for (uint32_t i = 0; i < header_.n_tokens; ++i) tokens_.push_back(static_cast<int32_t>(i % 11));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<float> chunk(uint32_t c) const {
    std::vector<float> out(header_.n_rows * header_.n_vocab);
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<float>(c) * 100.0f + static_cast<float>(i) * 0.5f;
    return out;
  }
  std::string write_valid() {
    const std::string path = (dir_ / "ref.logits").string();
    auto writer = ReferenceLogitsWriter::create(path, header_, tokens_);
    EXPECT_TRUE(writer.ok()) << writer.status().to_string();
    for (uint32_t c = 0; c < header_.n_chunks; ++c)
      EXPECT_TRUE(writer->append_chunk(chunk(c)).ok());
    EXPECT_TRUE(writer->commit().ok());
    return path;
  }
  std::vector<uint8_t> read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }

  fs::path dir_;
  ReferenceLogitsHeader header_;
  std::vector<int32_t> tokens_;
};

TEST_F(ReferenceLogitsFileTest, RoundTrips) {
  const std::string path = write_valid();
  auto file = ReferenceLogitsFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ(file->header().n_vocab, 11u);
  EXPECT_EQ(file->header().bos_id, 1);
  EXPECT_TRUE(file->header().add_bos);
  EXPECT_TRUE(std::equal(tokens_.begin(), tokens_.end(), file->tokens().begin()));
  for (uint32_t c = 0; c < 3; ++c) {
    const auto expected = chunk(c);
    const auto got = file->chunk_logits(c);
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size_bytes()), 0);
  }
}

TEST_F(ReferenceLogitsFileTest, IncompleteWriteLeavesNoFile) {
  const std::string path = (dir_ / "partial.logits").string();
  {
    auto writer = ReferenceLogitsWriter::create(path, header_, tokens_);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE(writer->append_chunk(chunk(0)).ok());
    EXPECT_FALSE(writer->append_chunk(std::vector<float>(5)).ok());  // wrong size
    EXPECT_FALSE(writer->commit().ok());
  }
  EXPECT_FALSE(fs::exists(path));
  for (const auto& entry : fs::directory_iterator(dir_)) ADD_FAILURE() << entry.path();
}

TEST_F(ReferenceLogitsFileTest, WriterRejectsInconsistentHeaders) {
  auto h = header_;
  h.first_row = 3;
  EXPECT_FALSE(ReferenceLogitsWriter::create((dir_ / "a").string(), h, tokens_).ok());
  h = header_;
  h.n_chunks = 4;  // 32 tokens needed, 26 stored
  EXPECT_FALSE(ReferenceLogitsWriter::create((dir_ / "b").string(), h, tokens_).ok());
  h = header_;
  EXPECT_FALSE(
      ReferenceLogitsWriter::create((dir_ / "c").string(), h, std::span(tokens_).first(10)).ok());
}

TEST_F(ReferenceLogitsFileTest, MalformedFilesAreRefusedWithTheirCode) {
  const auto good = read(write_valid());
  struct Case {
    const char* name;
    std::function<void(std::vector<uint8_t>&)> mutate;
    ErrorCode code;
  };
  auto set_u32 = [](std::vector<uint8_t>& b, size_t at, uint32_t v) { std::memcpy(&b[at], &v, 4); };
  const std::vector<Case> cases = {
      {"empty", [](auto& b) { b.clear(); }, ErrorCode::kFileTruncated},
      {"short header", [](auto& b) { b.resize(63); }, ErrorCode::kFileTruncated},
      {"magic", [](auto& b) { b[0] = 'X'; }, ErrorCode::kBadMagic},
      {"version", [&](auto& b) { set_u32(b, 8, 2); }, ErrorCode::kUnsupportedVersion},
      {"zero vocab", [&](auto& b) { set_u32(b, 12, 0); }, ErrorCode::kBadValue},
      {"huge vocab", [&](auto& b) { set_u32(b, 12, 0xFFFFFFFFu); }, ErrorCode::kBadValue},
      {"bigger vocab", [&](auto& b) { set_u32(b, 12, 12); }, ErrorCode::kSizeMismatch},
      {"tiny ctx", [&](auto& b) { set_u32(b, 16, 2); }, ErrorCode::kBadValue},
      {"rows", [&](auto& b) { set_u32(b, 28, 4); }, ErrorCode::kBadValue},
      {"flags", [&](auto& b) { set_u32(b, 32, 6); }, ErrorCode::kBadValue},
      {"bos", [&](auto& b) { set_u32(b, 36, 11); }, ErrorCode::kBadValue},
      {"too many chunks", [&](auto& b) { set_u32(b, 20, 5); }, ErrorCode::kBadValue},
      {"truncated logits", [](auto& b) { b.pop_back(); }, ErrorCode::kSizeMismatch},
      {"trailing bytes", [](auto& b) { b.push_back(0); }, ErrorCode::kSizeMismatch},
      {"digest", [](auto& b) { b[64] ^= 1; }, ErrorCode::kChecksumMismatch},
  };
  for (const auto& c : cases) {
    auto bytes = good;
    c.mutate(bytes);
    auto parsed = ReferenceLogitsFile::parse(bytes, "case.logits");
    ASSERT_FALSE(parsed.ok()) << c.name;
    EXPECT_EQ(parsed.status().code(), c.code) << c.name << ": " << parsed.status().to_string();
  }
  // Every truncation is refused.
  for (size_t n = 0; n < good.size(); n += 7) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_FALSE(ReferenceLogitsFile::parse(cut, "cut").ok()) << n;
  }
}

}  // namespace
}  // namespace synapse
