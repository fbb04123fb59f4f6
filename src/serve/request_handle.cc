// SPDX-License-Identifier: Apache-2.0
#include "serve/request_handle.h"

namespace synapse::serve {

void LoopWakeup::notify() {
  {
    std::lock_guard lock(mu_);
    pending_ = true;
  }
  cv_.notify_one();
}

void LoopWakeup::wait_until(Clock::time_point until) {
  std::unique_lock lock(mu_);
  cv_.wait_until(lock, until, [&] { return pending_; });
  pending_ = false;
}

bool RequestHandle::next(GenerationEvent& out) {
  std::unique_lock lock(mu_);
  if (returned_final_) return false;
  cv_.wait(lock, [&] { return !events_.empty(); });
  out = std::move(events_.front());
  events_.pop_front();
  if (out.final) returned_final_ = true;
  return true;
}

RequestHandle::Wait RequestHandle::next_for(GenerationEvent& out,
                                            std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (returned_final_) return Wait::kFinished;
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return Wait::kTimeout;
  out = std::move(events_.front());
  events_.pop_front();
  if (out.final) returned_final_ = true;
  return Wait::kEvent;
}

void RequestHandle::cancel() {
  if (!cancel_.exchange(true, std::memory_order_acq_rel)) wakeup_->notify();
}

void RequestHandle::set_listener(std::shared_ptr<LoopWakeup> listener) {
  std::lock_guard lock(mu_);
  listener_ = std::move(listener);
}

void RequestHandle::push(GenerationEvent event) {
  std::shared_ptr<LoopWakeup> listener;
  {
    std::lock_guard lock(mu_);
    if (pushed_final_) return;  // nothing follows the final event
    pushed_final_ = event.final;
    events_.push_back(std::move(event));
    listener = listener_;
  }
  cv_.notify_all();
  if (listener) listener->notify();
}

bool RequestHandle::finished() const {
  std::lock_guard lock(mu_);
  return pushed_final_;
}

}  // namespace synapse::serve
