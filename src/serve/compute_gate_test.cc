// SPDX-License-Identifier: Apache-2.0
// The cross-model gate: its fair-share policy by hand-charged step costs (no clock), and the gate
// itself with threads (one step at a time, a held turn kept while fair share allows).
#include "serve/compute_gate.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace synapse::serve {
namespace {

constexpr std::array<uint32_t, kRequestClassCount> kWeights = {16, 4, 1};

// Runs `steps` turns of two always-waiting members with one step cost; returns how many went to
// each.
std::pair<int, int> share_of(RequestClass a, RequestClass b, int steps) {
  FairShare share(kWeights);
  share.wait(1, a);
  share.wait(2, b);
  int ran_a = 0, ran_b = 0;
  for (int i = 0; i < steps; ++i) {
    const std::optional<GateMember> next = share.pick();
    EXPECT_TRUE(next.has_value());
    const bool is_a = *next == 1;
    ++(is_a ? ran_a : ran_b);
    share.charge(*next, is_a ? a : b, 0.01);
    share.wait(*next, is_a ? a : b);
  }
  return {ran_a, ran_b};
}

TEST(FairShareTest, OneClassSharesEvenly) {
  const auto [a, b] = share_of(RequestClass::kBatch, RequestClass::kBatch, 100);
  EXPECT_EQ(a, 50);
  EXPECT_EQ(b, 50);
}

TEST(FairShareTest, ClassesShareByTheirWeights) {
  const auto [interactive, background] =
      share_of(RequestClass::kInteractive, RequestClass::kBackground, 170);
  EXPECT_NEAR(interactive, 160, 2);
  EXPECT_NEAR(background, 10, 2);
  const auto [batch, bg] = share_of(RequestClass::kBatch, RequestClass::kBackground, 100);
  EXPECT_NEAR(batch, 80, 2);
  EXPECT_NEAR(bg, 20, 2);
}

TEST(FairShareTest, TiesGoToTheMoreUrgentClassThenTheEarlierArrival) {
  FairShare share(kWeights);
  share.wait(1, RequestClass::kBackground);
  share.wait(2, RequestClass::kInteractive);
  EXPECT_EQ(share.pick(), 2u);
  EXPECT_EQ(share.pick(), 1u);
  EXPECT_EQ(share.pick(), std::nullopt);
  share.wait(3, RequestClass::kBatch);
  share.wait(4, RequestClass::kBatch);
  EXPECT_EQ(share.pick(), 3u);
}

TEST(FairShareTest, AnIdleMemberSavesNoCredit) {
  FairShare share(kWeights);
  // Member 1 runs alone for a long time (100 s of batch work).
  for (int i = 0; i < 100; ++i) {
    share.wait(1, RequestClass::kBatch);
    ASSERT_EQ(share.pick(), 1u);
    share.charge(1, RequestClass::kBatch, 1.0);
  }
  // Member 2 arrives: it starts from where 1 was, so the two alternate instead of 2 running
  // for 100 s to catch up.
  share.wait(1, RequestClass::kBatch);
  share.wait(2, RequestClass::kBatch);
  int ran_2 = 0;
  for (int i = 0; i < 10; ++i) {
    const GateMember next = *share.pick();
    ran_2 += next == 2 ? 1 : 0;
    share.charge(next, RequestClass::kBatch, 1.0);
    share.wait(next, RequestClass::kBatch);
  }
  EXPECT_GE(ran_2, 4);
  EXPECT_LE(ran_2, 6);
}

TEST(FairShareTest, ForgottenMembersAreNotPicked) {
  FairShare share(kWeights);
  share.wait(1, RequestClass::kInteractive);
  share.wait(2, RequestClass::kBatch);
  share.forget(1);
  EXPECT_EQ(share.pick(), 2u);
  EXPECT_EQ(share.pick(), std::nullopt);
}

TEST(ComputeGateTest, OneStepAtATime) {
  ComputeGate gate(kWeights);
  std::atomic<int> inside{0};
  std::atomic<int> most{0};
  std::vector<std::thread> loops;
  for (int t = 0; t < 3; ++t) {
    loops.emplace_back([&, t] {
      const GateMember me = gate.join();
      ComputeGate::Grant grant;
      for (int i = 0; i < 200; ++i) {
        gate.take_turn(grant, me, static_cast<RequestClass>(t));
        const int now = ++inside;
        most = std::max(most.load(), now);
        std::this_thread::yield();
        --inside;
      }
      grant.release();
      gate.leave(me);
    });
  }
  for (std::thread& t : loops) t.join();
  EXPECT_EQ(most.load(), 1);
  EXPECT_EQ(gate.turns(), 600u);
}

TEST(ComputeGateTest, AHeldTurnGoesToAWaitingLoopWhenFairShareSaysSo) {
  ComputeGate gate(kWeights);
  const GateMember a = gate.join();
  const GateMember b = gate.join();
  ComputeGate::Grant held;
  gate.take_turn(held, a, RequestClass::kBatch);
  std::atomic<bool> b_ran{false};
  std::thread other([&] {
    ComputeGate::Grant grant;
    gate.take_turn(grant, b, RequestClass::kBatch);
    b_ran = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
  // b waits while a holds the cores (and works: turns are charged the CPU time they take) ...
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  volatile uint64_t work = 0;
  while (std::chrono::steady_clock::now() < until) work = work + 1;
  EXPECT_FALSE(b_ran.load());
  // ... and a's next turn, charged for those 20 ms, lets b go first: a waits for b's step.
  gate.take_turn(held, a, RequestClass::kBatch);
  EXPECT_TRUE(b_ran.load());
  held.release();
  other.join();
}

}  // namespace
}  // namespace synapse::serve
