// SPDX-License-Identifier: Apache-2.0
#include "base/echo.h"

#include <gtest/gtest.h>

#include "base/utf8.h"

namespace synapse {
namespace {

TEST(ClipForEcho, ShortValuesAreKeptWhole) {
  EXPECT_EQ(clip_for_echo("llama"), "llama");
  EXPECT_EQ(clip_for_echo(std::string(kMaxEchoBytes, 'x')), std::string(kMaxEchoBytes, 'x'));
}

TEST(ClipForEcho, LongValuesAreCutAndMarked) {
  const std::string huge(1 << 20, 'm');
  const std::string clipped = clip_for_echo(huge);
  EXPECT_EQ(clipped, std::string(kMaxEchoBytes, 'm') + "\u2026");
}

TEST(ClipForEcho, NeverSplitsACharacter) {
  // "é" is two bytes: at every offset the cut must leave valid UTF-8.
  std::string text;
  for (int i = 0; i < 200; ++i) text += "\xC3\xA9";
  for (size_t max = 1; max < 10; ++max) {
    const std::string clipped = clip_for_echo(text, max);
    EXPECT_TRUE(is_valid_utf8(clipped)) << max;
    EXPECT_LE(clipped.size(), max + 3);
  }
  const std::string emoji_text = "a\xF0\x9F\x98\x80\xF0\x9F\x98\x80";
  EXPECT_EQ(clip_for_echo(emoji_text, 3), "a\u2026");
}

}  // namespace
}  // namespace synapse
