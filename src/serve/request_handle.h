// SPDX-License-Identifier: Apache-2.0
// The thread-safe link between one request's caller (an HTTP thread) and the engine loop: a
// blocking queue of GenerationEvents the loop pushes and the caller pops, and cancel() from any
// thread. The handle is shared (shared_ptr) because both sides hold it and either may outlive the
// other: a disconnected client drops it early, a stopped service drops it after the final event.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include "serve/request.h"

namespace synapse::serve {

// Wakes the engine loop when it sleeps with nothing to run (a cancel, a new request, shutdown).
class LoopWakeup {
 public:
  void notify();
  // Waits until notified or `until`; clears the notification.
  void wait_until(Clock::time_point until);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool pending_ = false;
};

class RequestHandle {
 public:
  RequestHandle(std::string id, RequestClass request_class, std::shared_ptr<LoopWakeup> wakeup)
      : id_(std::move(id)), request_class_(request_class), wakeup_(std::move(wakeup)) {}
  RequestHandle(const RequestHandle&) = delete;
  RequestHandle& operator=(const RequestHandle&) = delete;

  const std::string& id() const { return id_; }
  RequestClass request_class() const { return request_class_; }

  // Blocks for the next event. Returns false (and leaves `out` alone) once the final event has
  // been returned.
  bool next(GenerationEvent& out);
  enum class Wait : uint8_t { kEvent, kTimeout, kFinished };
  // As next(), giving up after `timeout` (an HTTP thread polls its connection between waits).
  Wait next_for(GenerationEvent& out, std::chrono::milliseconds timeout);

  // Asks the loop to drop the request: it ends within one engine step with finish_reason
  // kCancelled (unless it finished first) and its KV pages are freed. Any thread, idempotent.
  void cancel();
  bool cancel_requested() const { return cancel_.load(std::memory_order_acquire); }

  // Also notifies `listener` after every push from now on (a worker process's event pump, which
  // forwards many handles' events); events pushed before are already queued. Any thread.
  void set_listener(std::shared_ptr<LoopWakeup> listener);

  // Producer side (the engine loop): appends an event; the final one closes the stream.
  void push(GenerationEvent event);
  bool finished() const;  // the final event was pushed

 private:
  const std::string id_;
  const RequestClass request_class_;
  std::shared_ptr<LoopWakeup> wakeup_;
  std::atomic<bool> cancel_{false};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<GenerationEvent> events_;
  std::shared_ptr<LoopWakeup> listener_;
  bool pushed_final_ = false;
  bool returned_final_ = false;
};

}  // namespace synapse::serve
