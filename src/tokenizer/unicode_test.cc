// SPDX-License-Identifier: Apache-2.0
#include "tokenizer/unicode.h"

#include <gtest/gtest.h>

#include "tokenizer/byte_level.h"

namespace synapse::tokenizer {
namespace {

TEST(Unicode, DecodesStrictlyAndStepsOverInvalidBytesOneByOne) {
  char32_t c = 0;
  EXPECT_EQ(decode_utf8("\xC3\xA9", 0, c), 2u);
  EXPECT_EQ(c, 0xE9u);
  EXPECT_EQ(decode_utf8("\xF0\x9F\x98\x80", 0, c), 4u);
  EXPECT_EQ(c, 0x1F600u);
  for (const char* bad : {"\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\x80", "\xE2\x82"}) {
    EXPECT_EQ(decode_utf8(bad, 0, c), 1u) << bad;
    EXPECT_EQ(c, kInvalidCodepoint);
  }
}

TEST(Unicode, PropertiesComeFromUtf8proc) {
  EXPECT_TRUE(is_letter(U'\u00E9'));
  EXPECT_TRUE(is_number(U'\u2463'));  // circled digit four: No
  EXPECT_TRUE(is_punctuation(U'\u3002'));
  EXPECT_TRUE(is_white_space(0x85));
  EXPECT_TRUE(is_white_space(0x3000));
  EXPECT_FALSE(is_white_space(0x200B));  // zero width space is a format character
  EXPECT_TRUE(is_bert_control(0x200D));
  EXPECT_TRUE(is_bert_control(0xE000));
  EXPECT_FALSE(is_bert_control(0xFFFF));  // unassigned: kept, as Hugging Face does
  EXPECT_EQ(to_lower(U'\u0130'), U'i');
  EXPECT_EQ(to_lower(U'\u0416'), U'\u0436');
}

TEST(Unicode, Normalization) {
  std::string out;
  ASSERT_TRUE(nfc("cafe\xCC\x81", out));
  EXPECT_EQ(out, "caf\xC3\xA9");
  ASSERT_TRUE(nfd("\xEC\x95\x88", out));  // Hangul syllable: all three jamo
  EXPECT_EQ(out, "\xE1\x84\x8B\xE1\x85\xA1\xE1\x86\xAB");
  EXPECT_TRUE(is_trivially_nfc("plain ASCII and \xC3\xA9"));
  EXPECT_FALSE(is_trivially_nfc("e\xCC\x81"));
}

TEST(ByteLevel, EveryByteRoundTrips) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  const std::string text = byte_level_encode(all);
  EXPECT_EQ(byte_level_decode(text), all);
  EXPECT_EQ(byte_level_encode(" \n"), "\xC4\xA0\xC4\x8A");  // "ĠĊ"
  EXPECT_EQ(byte_level_decode("a b"), std::nullopt);        // a plain space is not in the alphabet
}

}  // namespace
}  // namespace synapse::tokenizer
