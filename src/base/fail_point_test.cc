// SPDX-License-Identifier: Apache-2.0
#include "base/fail_point.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>

namespace synapse {
namespace {

std::vector<FailPointSetting> parsed(std::string_view text) {
  Result<std::vector<FailPointSetting>> settings = parse_fail_points(text);
  EXPECT_TRUE(settings.ok()) << text << ": " << settings.status().to_string();
  return settings.ok() ? *settings : std::vector<FailPointSetting>{};
}

void expect_refused(std::string_view text, std::string_view why) {
  const Result<std::vector<FailPointSetting>> settings = parse_fail_points(text);
  ASSERT_FALSE(settings.ok()) << text;
  EXPECT_EQ(settings.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(settings.status().message().find(why), std::string::npos)
      << text << ": " << settings.status().message();
  EXPECT_NE(settings.status().message().find("SYNAPSE_FAILPOINTS"), std::string::npos);
}

TEST(FailPoints, ParsesValuesActionsHitsAndMarkers) {
  EXPECT_TRUE(parsed("").empty());
  const std::vector<FailPointSetting> s =
      parsed("engine.step=crash@3,engine.prompt=hang:<<a:b@c=d>>,http.write_delay_ms=100");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].name, "engine.step");
  EXPECT_EQ(s[0].action, FailAction::kCrash);
  EXPECT_EQ(s[0].at_hit, 3u);
  EXPECT_EQ(s[1].action, FailAction::kHang);
  EXPECT_EQ(s[1].at_hit, 1u);
  EXPECT_EQ(s[1].marker, "<<a:b@c=d>>");  // the marker runs to the end of the item
  EXPECT_EQ(s[2].value, 100);
  EXPECT_EQ(parsed("engine.prompt=alloc@2:X")[0].action, FailAction::kAlloc);
  EXPECT_EQ(parsed("engine.step=abort")[0].action, FailAction::kAbort);
}

TEST(FailPoints, TextRoundTrips) {
  const std::string text = "engine.step=abort@12,engine.prompt=crash:m,serve.step_delay_ms=5";
  EXPECT_EQ(fail_points_text(parsed(text)), text);
}

TEST(FailPoints, RefusesWhatItCannotDoWithAClearReason) {
  expect_refused("engine.stp=crash", "no fail point of that name");
  expect_refused("engine.step", "expected name=value");
  expect_refused("engine.step=explode", "expected crash, abort, hang or alloc");
  expect_refused("engine.step=crash@0", "@N counts hits from 1");
  expect_refused("engine.step=crash@x", "@N counts hits from 1");
  expect_refused("engine.step=crash:marker", "no text to match a marker");
  expect_refused("engine.prompt=crash:", "a marker has 1 to 256 bytes");
  expect_refused("serve.step_delay_ms=crash", "expected a number");
  expect_refused("serve.step_delay_ms=-1", "expected a number");
  expect_refused("engine.step=crash,engine.step=abort", "already set");
  expect_refused("engine.step=crash,", "expected name=value");
  expect_refused(" engine.step=crash", "no fail point of that name");
  expect_refused(std::string(5000, 'x'), "longer than 4096 bytes");
}

TEST(FailPoints, TheNthMatchingHitActsOnce) {
  FailPoints points(parsed("engine.step=abort@3,engine.prompt=hang@2:MARK"));
  EXPECT_TRUE(points.has_actions());
  EXPECT_FALSE(points.hit("engine.step", ""));
  EXPECT_FALSE(points.hit("engine.step", ""));
  EXPECT_EQ(points.hit("engine.step", ""), FailAction::kAbort);
  EXPECT_FALSE(points.hit("engine.step", ""));
  // Hits without the marker do not count.
  EXPECT_FALSE(points.hit("engine.prompt", "plain"));
  EXPECT_FALSE(points.hit("engine.prompt", "a MARK b"));
  EXPECT_FALSE(points.hit("engine.prompt", "plain"));
  EXPECT_EQ(points.hit("engine.prompt", "MARK"), FailAction::kHang);
  EXPECT_FALSE(points.hit("http.write_delay_ms", ""));  // a value point never acts
}

TEST(FailPoints, ExactlyOneThreadActs) {
  FailPoints points(parsed("engine.step=crash@500"));
  std::atomic<int> acted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) acted += points.hit("engine.step", "").has_value() ? 1 : 0;
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(acted.load(), 1);
}

TEST(FailPoints, ValuePointsAreZeroUnlessSet) {
  FailPoints points(parsed("serve.step_delay_ms=25"));
  EXPECT_FALSE(points.has_actions());
  EXPECT_EQ(points.value("serve.step_delay_ms"), 25);
  EXPECT_EQ(points.value("http.write_delay_ms"), 0);
}

TEST(FailPoints, InertWhenTheVariableIsUnset) {
  // The test runs without SYNAPSE_FAILPOINTS: every point is a no-op.
  if (std::getenv("SYNAPSE_FAILPOINTS") != nullptr) GTEST_SKIP() << "SYNAPSE_FAILPOINTS is set";
  EXPECT_TRUE(fail_points_status().ok());
  EXPECT_FALSE(fail_points_armed());
  for (int i = 0; i < 10; ++i) fail_point("engine.step");
  fail_point("engine.prompt", "anything");
  EXPECT_EQ(fail_point_value("serve.step_delay_ms"), 0);
}

TEST(FailPoints, EveryPointIsDescribedAndDocumented) {
  std::ifstream in(std::string(SYNAPSE_SOURCE_DIR) + "/docs/testing-faults.md");
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(doc.empty());
  for (const FailPointInfo& info : fail_point_table()) {
    EXPECT_FALSE(info.where.empty()) << info.name;
    EXPECT_TRUE(info.kind == FailPointKind::kAction || !info.sees_text) << info.name;
    EXPECT_NE(doc.find("| `" + std::string(info.name) + "` |"), std::string::npos)
        << info.name << " has no row in docs/testing-faults.md";
  }
}

// The actions, each in a child process (gtest's death tests).
class FailActionDeathTest : public ::testing::Test {
 protected:
  // Re-executes the test binary for each death test, so that the child reads the environment
  // at start-up as a real program does.
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(FailActionDeathTest, CrashAndAbortKillTheProcessAndSaySo) {
  EXPECT_DEATH(perform_fail_action("engine.step", FailAction::kCrash),
               "fail point engine.step: crash");
  EXPECT_EXIT(perform_fail_action("engine.step", FailAction::kAbort),
              ::testing::KilledBySignal(SIGABRT), "fail point engine.step: abort");
}

// A hang ends only when something kills the process: here the child's own alarm, after a second.
TEST_F(FailActionDeathTest, HangSleepsUntilKilled) {
  EXPECT_EXIT(
      {
        ::alarm(1);
        perform_fail_action("engine.step", FailAction::kHang);
      },
      ::testing::KilledBySignal(SIGALRM), "fail point engine.step: hang");
}

size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0;
  size_t resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

// Allocation grows the process until killed; a watcher in the child ends it once 256 MiB more
// are resident (the alarm is the backstop: the test fails if memory does not grow).
TEST_F(FailActionDeathTest, AllocGrowsUntilKilled) {
  EXPECT_EXIT(
      {
        ::alarm(60);
        const size_t start = resident_bytes();
        std::thread([start] {
          for (;;) {
            if (resident_bytes() > start + (size_t{256} << 20)) std::_Exit(42);
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
          }
        }).detach();
        perform_fail_action("engine.step", FailAction::kAlloc);
      },
      ::testing::ExitedWithCode(42), "fail point engine.step: alloc");
}

// End to end through the environment: a child program started with the variable set.
TEST_F(FailActionDeathTest, TheEnvironmentArmsPointsAtStartup) {
  ::setenv("SYNAPSE_FAILPOINTS", "engine.step=abort@2", 1);
  EXPECT_EXIT(
      {
        fail_point("engine.step");
        std::fprintf(stderr, "survived the first step\n");
        fail_point("engine.step");
        std::_Exit(0);
      },
      ::testing::KilledBySignal(SIGABRT), "survived the first step(.|\n)*fail point engine.step");
  ::unsetenv("SYNAPSE_FAILPOINTS");
}

TEST_F(FailActionDeathTest, ABadVariableStopsTheProgramAtStartup) {
  ::setenv("SYNAPSE_FAILPOINTS", "engine.step=explode", 1);
  EXPECT_EXIT(std::_Exit(0), ::testing::ExitedWithCode(2),
              "SYNAPSE_FAILPOINTS: 'engine.step=explode': expected crash, abort, hang or alloc");
  ::unsetenv("SYNAPSE_FAILPOINTS");
  ::setenv("SYNAPSE_FAIL_POINTS", "serve.step_delay_ms=5", 1);
  EXPECT_EXIT(std::_Exit(0), ::testing::ExitedWithCode(2), "renamed SYNAPSE_FAILPOINTS");
  ::unsetenv("SYNAPSE_FAIL_POINTS");
}

}  // namespace
}  // namespace synapse
