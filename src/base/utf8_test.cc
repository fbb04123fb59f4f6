// SPDX-License-Identifier: Apache-2.0
#include "base/utf8.h"

#include <gtest/gtest.h>

namespace synapse {
namespace {

TEST(Utf8, AcceptsValidText) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain ascii"));
  EXPECT_TRUE(is_valid_utf8("\xC3\xA9t\xC3\xA9"));          // été
  EXPECT_TRUE(is_valid_utf8("\xE4\xB8\xAD\xE6\x96\x87"));   // 中文
  EXPECT_TRUE(is_valid_utf8("\xF0\x9F\x98\x80"));           // U+1F600
  EXPECT_TRUE(is_valid_utf8("\xF4\x8F\xBF\xBF"));           // U+10FFFF
  EXPECT_TRUE(is_valid_utf8("\xEE\x80\x80"));               // U+E000 (after surrogates)
  EXPECT_TRUE(is_valid_utf8(std::string_view("a\0b", 3)));  // NUL is a valid code point
}

struct InvalidCase {
  std::string_view bytes;
  size_t first_bad;
};

TEST(Utf8, RejectsInvalidSequencesAtTheRightByte) {
  const InvalidCase cases[] = {
      {"\x80", 0},               // lone continuation
      {"ab\xC3", 2},             // truncated 2-byte
      {"\xC0\xAF", 0},           // overlong '/'
      {"\xC1\xBF", 0},           // overlong
      {"\xE0\x80\xAF", 0},       // overlong 3-byte
      {"\xED\xA0\x80", 0},       // surrogate U+D800
      {"x\xF0\x8F\xBF\xBF", 1},  // overlong 4-byte
      {"\xF4\x90\x80\x80", 0},   // above U+10FFFF
      {"\xF5\x80\x80\x80", 0},   // invalid lead
      {"\xFF", 0},
      {"\xE4\xB8", 0},        // truncated 3-byte
      {"\xE4\x41\xAD", 0},    // bad continuation
      {"ok\xF0\x9F\x98", 2},  // truncated 4-byte
  };
  for (const InvalidCase& c : cases) {
    const auto bad = find_invalid_utf8(c.bytes);
    ASSERT_TRUE(bad.has_value()) << ::testing::PrintToString(std::string(c.bytes));
    EXPECT_EQ(*bad, c.first_bad);
  }
}

TEST(Utf8, AgreesWithCodePointEncodingForAllScalarValues) {
  // Every Unicode scalar value, encoded by hand, must validate; surrogates must not.
  for (uint32_t cp = 0; cp <= 0x10FFFF; cp += (cp < 0x20000 ? 1 : 97)) {
    std::string s;
    if (cp < 0x80) {
      s.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      s.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      s.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      s.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
    EXPECT_EQ(is_valid_utf8(s), !surrogate) << "U+" << std::hex << cp;
  }
}

}  // namespace
}  // namespace synapse
