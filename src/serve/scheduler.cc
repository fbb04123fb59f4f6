// SPDX-License-Identifier: Apache-2.0
#include "serve/scheduler.h"

#include <algorithm>
#include <limits>
#include <string>

namespace synapse::serve {

Scheduler::Scheduler(const SchedulerConfig& config) : config_(config) {
  if (config_.max_active == 0) config_.max_active = 1;
  if (config_.quantum_tokens == 0) config_.quantum_tokens = 1;
  for (uint32_t& w : config_.weights) w = std::max<uint32_t>(w, 1);
}

bool Scheduler::backlogged(size_t c) const {
  if (!waiting_[c].empty()) return true;
  return std::any_of(active_.begin(), active_.end(),
                     [&](const Entry& e) { return index(e.request_class) == c; });
}

Status Scheduler::enqueue(Ticket ticket, RequestClass c, uint64_t step) {
  const size_t ci = index(c);
  if (waiting_[ci].size() >= config_.max_queued[ci]) {
    return Status(ErrorCode::kQueueFull,
                  std::string("the ") + std::string(request_class_name(c)) + " queue is full (" +
                      std::to_string(config_.max_queued[ci]) + " waiting)",
                  ErrorWhere{.field = "request_class"});
  }
  // A class that was idle joins at the virtual time of the busiest-served backlogged class it
  // competes with, so idleness earns no credit to be spent later in a burst.
  if (!backlogged(ci)) {
    double floor = std::numeric_limits<double>::infinity();
    for (size_t o = 0; o < kRequestClassCount; ++o) {
      if (o != ci && backlogged(o)) floor = std::min(floor, virtual_time_[o]);
    }
    if (floor != std::numeric_limits<double>::infinity()) {
      virtual_time_[ci] = std::max(virtual_time_[ci], floor);
    }
  }
  waiting_[ci].push_back(Entry{ticket, c, next_arrival_++, step, 0});
  return ok_status();
}

void Scheduler::remove(Ticket ticket) {
  for (auto& queue : waiting_) {
    const auto it = std::find_if(queue.begin(), queue.end(),
                                 [&](const Entry& e) { return e.ticket == ticket; });
    if (it != queue.end()) {
      queue.erase(it);
      return;
    }
  }
  const auto it = std::find_if(active_.begin(), active_.end(),
                               [&](const Entry& e) { return e.ticket == ticket; });
  if (it != active_.end()) active_.erase(it);
}

void Scheduler::charge(Ticket ticket, size_t tokens) {
  for (Entry& e : active_) {
    if (e.ticket != ticket) continue;
    e.quantum_used += tokens;
    const size_t ci = index(e.request_class);
    virtual_time_[ci] += static_cast<double>(tokens) / config_.weights[ci];
    return;
  }
}

size_t Scheduler::waiting() const {
  size_t n = 0;
  for (const auto& q : waiting_) n += q.size();
  return n;
}

size_t Scheduler::active(RequestClass c) const {
  return static_cast<size_t>(std::count_if(active_.begin(), active_.end(),
                                           [c](const Entry& e) { return e.request_class == c; }));
}

bool Scheduler::is_active(Ticket ticket) const {
  return std::any_of(active_.begin(), active_.end(),
                     [&](const Entry& e) { return e.ticket == ticket; });
}

size_t Scheduler::non_interactive_active() const {
  return static_cast<size_t>(std::count_if(active_.begin(), active_.end(), [](const Entry& e) {
    return e.request_class != RequestClass::kInteractive;
  }));
}

int Scheduler::pick_class(uint64_t step, bool interactive_only) const {
  const size_t n_classes = interactive_only ? 1 : kRequestClassCount;
  // Aging first: the oldest request that has waited aging_steps, whatever its class.
  int aged = -1;
  for (size_t c = 0; c < n_classes; ++c) {
    if (waiting_[c].empty()) continue;
    const Entry& head = waiting_[c].front();
    if (step - std::min(step, head.enqueue_step) < config_.aging_steps) continue;
    if (aged < 0 || head.arrival < waiting_[static_cast<size_t>(aged)].front().arrival) {
      aged = static_cast<int>(c);
    }
  }
  if (aged >= 0) return aged;
  // Weighted fair share: the smallest virtual time; ties to the higher class.
  int best = -1;
  for (size_t c = 0; c < n_classes; ++c) {
    if (waiting_[c].empty()) continue;
    if (best < 0 || virtual_time_[c] < virtual_time_[static_cast<size_t>(best)]) {
      best = static_cast<int>(c);
    }
  }
  return best;
}

void Scheduler::start_head(size_t c, Decision& out) {
  Entry e = waiting_[c].front();
  waiting_[c].pop_front();
  e.quantum_used = 0;
  out.started.push_back(e.ticket);
  active_.push_back(e);
}

void Scheduler::requeue(Entry entry) {
  auto& queue = waiting_[index(entry.request_class)];
  const auto it = std::find_if(queue.begin(), queue.end(),
                               [&](const Entry& e) { return e.arrival > entry.arrival; });
  queue.insert(it, entry);
}

void Scheduler::schedule(uint64_t step, Decision& out) {
  out.preempted.clear();
  out.started.clear();
  // Fill free slots. The reserved slots are for interactive requests only.
  const size_t reserved = config_.max_active > 1
                              ? std::min(config_.reserved_interactive_slots, config_.max_active - 1)
                              : 0;
  while (active_.size() < config_.max_active) {
    const bool interactive_only = non_interactive_active() >= config_.max_active - reserved;
    const int c = pick_class(step, interactive_only);
    if (c < 0) break;
    start_head(static_cast<size_t>(c), out);
  }
  // Quanta: a request of a higher class waiting with no free slot takes the slot of a
  // lower-class request that has used its quantum (the lowest class, the longest-running first).
  for (size_t c = 0; c + 1 < kRequestClassCount; ++c) {
    while (!waiting_[c].empty()) {
      int victim = -1;
      for (size_t i = 0; i < active_.size(); ++i) {
        const Entry& e = active_[i];
        if (index(e.request_class) <= c || e.quantum_used < config_.quantum_tokens) continue;
        if (victim < 0) {
          victim = static_cast<int>(i);
          continue;
        }
        const Entry& v = active_[static_cast<size_t>(victim)];
        if (e.request_class > v.request_class ||
            (e.request_class == v.request_class && e.quantum_used > v.quantum_used)) {
          victim = static_cast<int>(i);
        }
      }
      if (victim < 0) break;
      Entry v = active_[static_cast<size_t>(victim)];
      active_.erase(active_.begin() + victim);
      out.preempted.push_back(v.ticket);
      requeue(v);
      start_head(c, out);
    }
  }
}

}  // namespace synapse::serve
