// SPDX-License-Identifier: Apache-2.0
#include "sample/stop_matcher.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/utf8.h"

namespace synapse {
namespace {

StopMatcher make(std::vector<std::string> stops) {
  Result<StopMatcher> matcher = StopMatcher::create(std::move(stops));
  EXPECT_TRUE(matcher.ok()) << matcher.status().to_string();
  return std::move(matcher).value();
}

struct Outcome {
  std::string text;  // everything emitted, flush included
  bool stopped = false;
  std::vector<std::string> steps;  // what each feed emitted
};

Outcome run(StopMatcher& matcher, const std::vector<std::string>& pieces) {
  Outcome out;
  for (const std::string& piece : pieces) {
    const StopMatcher::Step step = matcher.feed(piece);
    out.text += step.text;
    out.steps.emplace_back(step.text);
    if (step.stopped) {
      out.stopped = true;
      break;
    }
  }
  out.text += matcher.flush();
  return out;
}

// The text cut into 1-byte pieces.
std::vector<std::string> bytes_of(const std::string& text) {
  std::vector<std::string> pieces;
  for (char c : text) pieces.emplace_back(1, c);
  return pieces;
}

// What OpenAI returns: the text up to the earliest occurrence of any stop string.
std::string reference(const std::string& text, const std::vector<std::string>& stops) {
  size_t cut = std::string::npos;
  for (const std::string& s : stops) cut = std::min(cut, text.find(s));
  return cut == std::string::npos ? text : text.substr(0, cut);
}

TEST(StopMatcher, StopInsideOnePiece) {
  StopMatcher m = make({"END"});
  const Outcome out = run(m, {"hello ", "wor", "ld END and more"});
  EXPECT_TRUE(out.stopped);
  EXPECT_EQ(out.text, "hello world ");
  EXPECT_EQ(m.matched_stop(), 0u);
}

TEST(StopMatcher, StopSplitAcrossOneBytePieces) {
  StopMatcher m = make({"</answer>"});
  const Outcome out = run(m, bytes_of("The answer is 42.</answer> trailing"));
  EXPECT_TRUE(out.stopped);
  EXPECT_EQ(out.text, "The answer is 42.");
  // Nothing that could begin the stop string is emitted early: '<' is held back.
  EXPECT_EQ(out.steps[17], "");
}

TEST(StopMatcher, HeldBackPrefixIsReleasedWhenItDiverges) {
  StopMatcher m = make({"abc"});
  EXPECT_EQ(m.feed("xa").text, "x");
  EXPECT_EQ(m.feed("b").text, "");
  const StopMatcher::Step step = m.feed("d");
  EXPECT_FALSE(step.stopped);
  EXPECT_EQ(step.text, "abd");
  EXPECT_EQ(m.feed("ab").text, "");
  EXPECT_EQ(m.flush(), "ab");  // generation ended without a stop: the held text is emitted
}

TEST(StopMatcher, OverlappingPrefixes) {
  // "aab" starts before "ab" in "xaab": the earliest match wins, the text before it is "x".
  for (const auto& stops : {std::vector<std::string>{"ab", "aab"}, {"aab", "ab"}}) {
    StopMatcher m = make(stops);
    const Outcome out = run(m, bytes_of("xaab"));
    EXPECT_TRUE(out.stopped);
    EXPECT_EQ(out.text, "x");
    EXPECT_EQ(stops[*m.matched_stop()], "aab");
  }
  // Only "ab": "a" before it is text.
  StopMatcher m = make({"ab"});
  const Outcome out = run(m, bytes_of("xaab"));
  EXPECT_EQ(out.text, "xa");
  // Self-overlapping stop string.
  StopMatcher m2 = make({"aaab"});
  EXPECT_EQ(run(m2, bytes_of("aaaaab!")).text, "aa");
}

TEST(StopMatcher, MultipleStopStringsEarliestWins) {
  StopMatcher m = make({"\n\n", "User:", "###"});
  const Outcome out = run(m, {"Sure. ###", " User:"});
  EXPECT_TRUE(out.stopped);
  EXPECT_EQ(out.text, "Sure. ");
  EXPECT_EQ(m.matched_stop(), 2u);
  // After a stop, further pieces are ignored.
  const StopMatcher::Step after = m.feed("more");
  EXPECT_TRUE(after.stopped);
  EXPECT_EQ(after.text, "");
  EXPECT_EQ(m.flush(), "");
  // Two stop strings in one piece: the one earlier in the text wins, whatever the list order
  // (above, "###" stopped before "User:" arrived, which says nothing about the order).
  StopMatcher both = make({"\n\n", "User:", "###"});
  const Outcome first = run(both, {"Sure. User: ###"});
  EXPECT_TRUE(first.stopped);
  EXPECT_EQ(first.text, "Sure. ");
  EXPECT_EQ(both.matched_stop(), 1u);
}

TEST(StopMatcher, NoStopStringsPassesEverythingThrough) {
  StopMatcher m = make({});
  EXPECT_EQ(m.feed("abc").text, "abc");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcher, Utf8StopStringsAndWholeCharacters) {
  const std::string text = "Привет, мир! 你好世界。🙂 end";
  const std::vector<std::string> stops = {"世界", "🙂 e", "мир?"};
  // Fed whole characters (as the detokenizer does), every emitted piece is valid UTF-8.
  std::vector<std::string> chars;
  for (size_t i = 0; i < text.size();) {
    size_t len = 1;
    while (i + len < text.size() && (static_cast<unsigned char>(text[i + len]) & 0xC0) == 0x80) {
      ++len;
    }
    chars.push_back(text.substr(i, len));
    i += len;
  }
  StopMatcher m = make(stops);
  const Outcome out = run(m, chars);
  EXPECT_TRUE(out.stopped);
  EXPECT_EQ(out.text, "Привет, мир! 你好");
  for (const std::string& step : out.steps) EXPECT_TRUE(is_valid_utf8(step)) << step;
  // Byte pieces give the same text.
  StopMatcher bytes = make(stops);
  EXPECT_EQ(run(bytes, bytes_of(text)).text, "Привет, мир! 你好");
}

TEST(StopMatcher, RandomSplitsMatchReference) {
  // Texts over a small alphabet so that partial matches are frequent; every split of the text
  // into pieces must give the reference result.
  const std::vector<std::string> stops = {"aba", "bb", "abab", "caa"};
  uint64_t state = 12345;
  const auto next = [&]() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  for (int c = 0; c < 2000; ++c) {
    std::string text;
    const size_t n = next() % 20;
    for (size_t i = 0; i < n; ++i) text += "abc"[next() % 3];
    std::vector<std::string> pieces;
    for (size_t i = 0; i < text.size();) {
      const size_t len = std::min<size_t>(1 + next() % 4, text.size() - i);
      pieces.push_back(text.substr(i, len));
      i += len;
    }
    StopMatcher m = make(stops);
    const Outcome out = run(m, pieces);
    const std::string want = reference(text, stops);
    ASSERT_EQ(out.text, want) << "text " << text;
    ASSERT_EQ(out.stopped, want.size() != text.size()) << "text " << text;
  }
}

TEST(StopMatcher, RejectsBadStopStrings) {
  const auto field_of = [](std::vector<std::string> stops) {
    Result<StopMatcher> m = StopMatcher::create(std::move(stops));
    EXPECT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), ErrorCode::kInvalidArgument);
    return m.status().where().field;
  };
  EXPECT_EQ(field_of({"ok", ""}), "stop");
  EXPECT_EQ(field_of({std::string(StopMatcher::kMaxStopBytes + 1, 'x')}), "stop");
  EXPECT_EQ(field_of(std::vector<std::string>(StopMatcher::kMaxStops + 1, "s")), "stop");
  EXPECT_EQ(field_of({"\xC3"}), "stop");  // a lone UTF-8 lead byte
  EXPECT_TRUE(StopMatcher::create(std::vector<std::string>(StopMatcher::kMaxStops, "s")).ok());
  EXPECT_TRUE(StopMatcher::create({std::string(StopMatcher::kMaxStopBytes, 'x')}).ok());
}

}  // namespace
}  // namespace synapse
