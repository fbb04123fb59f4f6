// SPDX-License-Identifier: Apache-2.0
// The engine loop's fail points (base/fail_point.h): each test runs a service in a child process
// started with SYNAPSE_FAILPOINTS set, as a crash-isolation test starts `synapse serve`, and checks
// that the point acts where it is placed (the Nth step, a prompt holding a marker) and only there.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>

#include "serve/service.h"
#include "serve/service_test_support.h"

namespace synapse::serve {
namespace {

class ServiceFailPointTest : public ServingModelTest {
 protected:
  void SetUp() override {
    // Each child re-executes the test program, so it reads the variable at start-up.
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    SynthOptions o;
    o.arch = "qwen2";
    o.n_embd = 64;
    o.n_ff = 128;
    o.n_head = 4;
    o.n_head_kv = 2;
    open_synthetic(o);
  }
  void TearDown() override { ::unsetenv("SYNAPSE_FAILPOINTS"); }

  // Generates `max_tokens` greedy tokens after `text`, then ends the child with status 0: a point
  // that acts ends it first.
  [[noreturn]] void generate_then_exit(std::string_view text, int32_t max_tokens) {
    Service service(*model_, *tokenizer_, small_service_config(1));
    auto handle = service.submit(greedy_request(tokenizer_->encode(text), max_tokens));
    if (!handle.ok()) std::_Exit(3);
    (void)final_event(**handle);
    service.shutdown(std::chrono::milliseconds(0));
    std::_Exit(0);
  }
};

TEST_F(ServiceFailPointTest, EngineStepActsAtTheNthStep) {
  ::setenv("SYNAPSE_FAILPOINTS", "engine.step=abort@3", 1);
  EXPECT_EXIT(generate_then_exit("hello", 8), ::testing::KilledBySignal(SIGABRT),
              "fail point engine.step: abort");
  // Two steps (one prefill, one decode) never reach the third.
  EXPECT_EXIT(generate_then_exit("hello", 1), ::testing::ExitedWithCode(0), "");
}

TEST_F(ServiceFailPointTest, EnginePromptActsOnlyOnAMarkedPrompt) {
  ::setenv("SYNAPSE_FAILPOINTS", "engine.prompt=crash:<<CRASH>>", 1);
  EXPECT_DEATH(generate_then_exit("tell me <<CRASH>> a story", 4),
               "fail point engine.prompt: crash");
  EXPECT_EXIT(generate_then_exit("tell me a story", 4), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace synapse::serve
