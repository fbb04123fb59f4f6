// SPDX-License-Identifier: Apache-2.0
// The scheduling policy of the engine loop, without threads, clocks or an engine, so it can be
// tested by counting steps. It decides which requests hold one of the `max_active` slots (the
// sequences decoded in every step) and in which order waiting requests get one.
//
// Policy:
//  - Admission is bounded per class: a full queue refuses at once (queue_full, HTTP 429).
//  - Free slots go to the class with the smallest virtual time (weighted fair share: a class's
//    virtual time advances by tokens / weight); a request that has waited `aging_steps` goes
//    before everything else, oldest first, so nothing starves. Batch and background requests may
//    not take the last `reserved_interactive_slots` slots, so an interactive request arriving
//    while they saturate the engine starts at the next step.
//  - Decode proceeds in quanta: a running request that has decoded `quantum_tokens` since it was
//    (re)started yields its slot when a request of a higher class waits with no free slot. It
//    keeps its KV and goes back to the front of its queue (arrival order).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "base/status.h"
#include "serve/request.h"

namespace synapse::serve {

struct SchedulerConfig {
  size_t max_active = 4;  // `--parallel`: sequences decoded together
  std::array<size_t, kRequestClassCount> max_queued = {64, 128, 256};
  std::array<uint32_t, kRequestClassCount> weights = {16, 4, 1};
  size_t quantum_tokens = 16;
  size_t reserved_interactive_slots = 1;  // applies when max_active > 1
  uint64_t aging_steps = 512;
};

using Ticket = uint64_t;

class Scheduler {
 public:
  explicit Scheduler(const SchedulerConfig& config);

  // Queues a new request. kQueueFull when its class already has max_queued waiting.
  Status enqueue(Ticket ticket, RequestClass c, uint64_t step);
  // Forgets a waiting or running ticket (finished, cancelled, expired); no-op if unknown.
  void remove(Ticket ticket);
  // Counts decoded tokens of a running ticket toward its quantum and its class's share.
  void charge(Ticket ticket, size_t tokens);

  struct Decision {
    std::vector<Ticket> preempted;  // give up their slot (keep their KV), back to the queue
    std::vector<Ticket> started;    // take a slot from this step on
  };
  // Once per step, before the batch is built.
  void schedule(uint64_t step, Decision& out);

  size_t waiting(RequestClass c) const { return waiting_[index(c)].size(); }
  size_t waiting() const;
  size_t active() const { return active_.size(); }
  size_t active(RequestClass c) const;
  bool is_active(Ticket ticket) const;
  const SchedulerConfig& config() const { return config_; }

 private:
  struct Entry {
    Ticket ticket = 0;
    RequestClass request_class = RequestClass::kInteractive;
    uint64_t arrival = 0;       // order of enqueue (the queue order)
    uint64_t enqueue_step = 0;  // for aging
    size_t quantum_used = 0;    // decoded tokens since (re)started
  };
  static size_t index(RequestClass c) { return static_cast<size_t>(c); }

  bool backlogged(size_t c) const;
  // The class whose head should start next, or -1; `interactive_only` when only the reserved
  // slots are free.
  int pick_class(uint64_t step, bool interactive_only) const;
  void start_head(size_t c, Decision& out);
  void requeue(Entry entry);
  size_t non_interactive_active() const;

  SchedulerConfig config_;
  std::array<std::deque<Entry>, kRequestClassCount> waiting_;
  std::vector<Entry> active_;
  std::array<double, kRequestClassCount> virtual_time_{};
  uint64_t next_arrival_ = 0;
};

}  // namespace synapse::serve
