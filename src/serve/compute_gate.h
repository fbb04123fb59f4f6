// SPDX-License-Identifier: Apache-2.0
// The machine's cores shared by the engine loops of several models. Each loaded model has its own
// Service, whose loop runs steps on a thread pool as wide as the machine; left alone, two loops
// would run their steps at once, each slowed by the other and neither aware of the other's
// classes. The gate lets one step run at a time and gives the next step to the waiting loop with
// the smallest virtual time: a weighted fair share across models by the class of the work in
// each step, with the Scheduler's class weights. So an interactive request on one model waits
// for about one step of another model's batch work (then runs weight-to-weight ahead of it), and
// two models with work of one class share the cores evenly.
//
// Virtual time: a loop's advances by the CPU seconds its turn took (the process's, in which only
// that loop's step runs meanwhile; a turn whose threads the operating system set aside for
// another program is not charged for it) divided by the weight of the most urgent class in
// the step. A loop that starts waiting after being idle starts from the virtual time of
// the step granted last, so it neither saves up credit while idle nor pays for its past. Ties go
// to the more urgent class, then to the earlier arrival.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

#include "serve/request.h"
#include "serve/scheduler.h"

namespace synapse::serve {

using GateMember = uint64_t;

// The policy alone: no threads, no clock (tests charge costs by hand).
class FairShare {
 public:
  explicit FairShare(const std::array<uint32_t, kRequestClassCount>& weights);

  // `member` wants to run a step whose most urgent class is `c`.
  void wait(GateMember member, RequestClass c);
  // The waiting member to run next (no longer waiting), or none.
  std::optional<GateMember> pick();
  // A step of `member` in class `c` took `seconds`.
  void charge(GateMember member, RequestClass c, double seconds);
  // Forgets `member` (waiting or not).
  void forget(GateMember member);

  size_t waiting() const { return waiting_.size(); }

 private:
  struct Waiter {
    RequestClass request_class = RequestClass::kInteractive;
    uint64_t arrival = 0;
  };
  std::array<uint32_t, kRequestClassCount> weights_;
  std::map<GateMember, double> virtual_time_;
  std::map<GateMember, Waiter> waiting_;
  double floor_ = 0.0;  // the virtual time of the member granted last
  uint64_t next_arrival_ = 0;
};

class ComputeGate {
 public:
  explicit ComputeGate(
      const std::array<uint32_t, kRequestClassCount>& weights = SchedulerConfig{}.weights);
  ComputeGate(const ComputeGate&) = delete;
  ComputeGate& operator=(const ComputeGate&) = delete;

  GateMember join();
  void leave(GateMember member);  // after its last turn

  // A loop's hold on the cores, kept from one step to the next while fair share allows (a loop
  // between two steps does not hand the cores to another loop for the moment it prepares its
  // next step). Releasing it (or destroying it) charges its time and hands the cores on.
  class Grant {
   public:
    Grant() = default;
    Grant(const Grant&) = delete;
    Grant& operator=(const Grant&) = delete;
    ~Grant() { release(); }
    void release();
    bool held() const { return gate_ != nullptr; }
    double waited_s() const { return waited_s_; }  // the last turn's wait for the cores

   private:
    friend class ComputeGate;
    ComputeGate* gate_ = nullptr;
    GateMember member_ = 0;
    RequestClass class_ = RequestClass::kInteractive;
    double start_cpu_s_ = 0.0;  // the process's CPU time when the turn began
    double waited_s_ = 0.0;
  };

  // Blocks until `member` may run a step whose most urgent class is `c`. A held `grant` (the
  // previous step's) is charged first, and the cores go to another waiting loop when fair share
  // puts it first.
  void take_turn(Grant& grant, GateMember member, RequestClass c);

  uint64_t turns() const;

 private:
  void release(Grant& grant);
  // Charges `grant`'s time since it started and lets go of the cores (under mu_).
  void charge_locked(Grant& grant);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  FairShare share_;
  std::optional<GateMember> running_;
  GateMember next_member_ = 1;
  uint64_t turns_ = 0;
};

}  // namespace synapse::serve
