// SPDX-License-Identifier: Apache-2.0
#include "serve/compute_gate.h"

#include <time.h>

#include <algorithm>

namespace synapse::serve {
namespace {

double process_cpu_s() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace

FairShare::FairShare(const std::array<uint32_t, kRequestClassCount>& weights) : weights_(weights) {
  for (uint32_t& w : weights_) w = std::max<uint32_t>(w, 1);
}

void FairShare::wait(GateMember member, RequestClass c) {
  double& vt = virtual_time_[member];
  vt = std::max(vt, floor_);
  waiting_[member] = Waiter{c, next_arrival_++};
}

std::optional<GateMember> FairShare::pick() {
  auto best = waiting_.end();
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if (best == waiting_.end()) {
      best = it;
      continue;
    }
    const double a = virtual_time_[it->first];
    const double b = virtual_time_[best->first];
    if (a != b) {
      if (a < b) best = it;
    } else if (it->second.request_class != best->second.request_class) {
      if (it->second.request_class < best->second.request_class) best = it;
    } else if (it->second.arrival < best->second.arrival) {
      best = it;
    }
  }
  if (best == waiting_.end()) return std::nullopt;
  const GateMember member = best->first;
  floor_ = std::max(floor_, virtual_time_[member]);
  waiting_.erase(best);
  return member;
}

void FairShare::charge(GateMember member, RequestClass c, double seconds) {
  virtual_time_[member] +=
      std::max(seconds, 0.0) / static_cast<double>(weights_[static_cast<size_t>(c)]);
}

void FairShare::forget(GateMember member) {
  waiting_.erase(member);
  virtual_time_.erase(member);
}

ComputeGate::ComputeGate(const std::array<uint32_t, kRequestClassCount>& weights)
    : share_(weights) {}

GateMember ComputeGate::join() {
  std::lock_guard lock(mu_);
  return next_member_++;
}

void ComputeGate::leave(GateMember member) {
  std::lock_guard lock(mu_);
  share_.forget(member);
}

void ComputeGate::Grant::release() {
  if (gate_ != nullptr) gate_->release(*this);
}

void ComputeGate::charge_locked(Grant& grant) {
  share_.charge(grant.member_, grant.class_, process_cpu_s() - grant.start_cpu_s_);
  grant.gate_ = nullptr;
  running_.reset();
}

void ComputeGate::take_turn(Grant& grant, GateMember member, RequestClass c) {
  const auto asked = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  if (grant.gate_ == this) charge_locked(grant);
  share_.wait(member, c);
  if (!running_) {
    running_ = share_.pick();
    if (running_ != member) cv_.notify_all();
  }
  cv_.wait(lock, [&] { return running_ == member; });
  ++turns_;
  grant.gate_ = this;
  grant.member_ = member;
  grant.class_ = c;
  grant.start_cpu_s_ = process_cpu_s();
  grant.waited_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
}

void ComputeGate::release(Grant& grant) {
  {
    std::lock_guard lock(mu_);
    if (grant.gate_ != this) return;
    charge_locked(grant);
    running_ = share_.pick();
  }
  cv_.notify_all();
}

uint64_t ComputeGate::turns() const {
  std::lock_guard lock(mu_);
  return turns_;
}

}  // namespace synapse::serve
