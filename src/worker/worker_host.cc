// SPDX-License-Identifier: Apache-2.0
#include "worker/worker_host.h"

#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "worker/frame.h"

namespace synapse::worker {
namespace {

class Host {
 public:
  Host(int fd, serve::Service& service, const RecipeCompiler& compile, const HostOptions& options)
      : fd_(fd), service_(service), compile_(compile), options_(options) {}

  Status run(const Hello& hello) {
    SYN_RETURN_IF_ERROR(send(FrameType::kHello, 0, encode_hello(hello)));
    pump_ = std::thread([this] { pump(); });
    Status status = read_loop();
    service_.shutdown(options_.orphan_grace);  // idempotent: after a shutdown frame, a no-op
    stop_pump();
    return status;
  }

 private:
  Status read_loop() {
    while (true) {
      Result<std::optional<Frame>> frame = read_frame(fd_);
      if (!frame.ok()) return frame.status();
      if (!*frame) return ok_status();  // the front closed the stream: it is gone
      const Frame& f = **frame;
      switch (f.type) {
        case FrameType::kSubmit:
          SYN_RETURN_IF_ERROR(send(FrameType::kSubmitReply, f.request_id,
                                   encode_status(submit(f.request_id, f.payload))));
          break;
        case FrameType::kCancel:
          cancel(f.request_id);
          break;
        case FrameType::kMetricsRequest:
          SYN_RETURN_IF_ERROR(
              send(FrameType::kMetricsReply, f.request_id, service_.render_prometheus()));
          break;
        case FrameType::kShutdown: {
          SYN_ASSIGN_OR_RETURN(const uint64_t grace_ms, decode_u64(f.payload));
          // Drains: every request's final event is pushed before this returns, and the pump
          // forwards them all before stop_pump() lets it go.
          service_.shutdown(std::chrono::milliseconds(grace_ms));
          return ok_status();
        }
        default:
          return Status(ErrorCode::kProtocolError, "worker: the front sent a frame of type " +
                                                       std::to_string(static_cast<int>(f.type)) +
                                                       ", which only a worker sends");
      }
    }
  }

  // Submits one request; its events go out through the pump. The answer is the submit's status.
  Status submit(uint64_t id, const std::string& payload) {
    Result<serve::GenerationRequest> request = decode_request(payload);
    if (!request.ok()) return request.status();
    if (!request->constraint_recipe.empty()) {
      Result<std::shared_ptr<constrain::TokenMasker>> masker = compile_(request->constraint_recipe);
      if (!masker.ok()) return masker.status();
      request->constraint = std::move(masker).value();
    }
    // Written on the engine's thread before the request's first step, so the front knows it
    // was running even when that step kills the process.
    request->on_start = [this, id] { (void)send(FrameType::kStarted, id, {}); };
    Result<std::shared_ptr<serve::RequestHandle>> handle =
        service_.submit(std::move(request).value());
    if (!handle.ok()) return handle.status();
    (*handle)->set_listener(wakeup_);
    {
      std::lock_guard lock(mu_);
      handles_[id] = *handle;
    }
    wakeup_->notify();  // events pushed before the listener was set
    return ok_status();
  }

  void cancel(uint64_t id) {
    std::shared_ptr<serve::RequestHandle> handle;
    {
      std::lock_guard lock(mu_);
      const auto found = handles_.find(id);
      if (found != handles_.end()) handle = found->second;
    }
    if (handle) handle->cancel();
  }

  // Forwards every handle's queued events, and a heartbeat when one is due, until stopped; the
  // last pass after the stop forwards what the drained service pushed last.
  void pump() {
    auto next_beat = serve::Clock::now();
    std::vector<std::pair<uint64_t, std::shared_ptr<serve::RequestHandle>>> live;
    while (true) {
      wakeup_->wait_until(next_beat);
      bool stopping = false;
      {
        std::lock_guard lock(mu_);
        stopping = stop_;
        live.assign(handles_.begin(), handles_.end());
      }
      std::vector<uint64_t> finished;
      for (auto& [id, handle] : live) {
        serve::GenerationEvent event;
        while (handle->next_for(event, std::chrono::milliseconds(0)) ==
               serve::RequestHandle::Wait::kEvent) {
          const bool final = event.final;
          const Status sent = send(FrameType::kEvent, id, encode_event(event));
          if (!sent.ok() && sent.code() == ErrorCode::kLimitExceeded) {
            // An event the framing cannot carry (write_frame's bound) ends its request with
            // that error rather than leaving the front waiting for an event that never comes.
            handle->cancel();
            (void)send(FrameType::kEvent, id, encode_event(too_large(event, sent)));
            finished.push_back(id);
            break;
          }
          if (final) finished.push_back(id);
        }
      }
      live.clear();
      if (!finished.empty()) {
        std::lock_guard lock(mu_);
        for (uint64_t id : finished) handles_.erase(id);
      }
      if (serve::Clock::now() >= next_beat) {
        (void)send(FrameType::kHeartbeat, 0, encode_heartbeat(heartbeat()));
        next_beat = serve::Clock::now() + options_.heartbeat;
      }
      if (stopping) return;
    }
  }

  static serve::GenerationEvent too_large(const serve::GenerationEvent& event, const Status& why) {
    serve::GenerationEvent out;
    out.step = event.step;
    out.final = true;
    out.finish_reason = serve::FinishReason::kError;
    out.error = why;
    out.usage = event.usage;
    return out;
  }

  Heartbeat heartbeat() const {
    const serve::ServiceStats s = service_.stats();
    return Heartbeat{.steps = s.steps,
                     .kv_pages_in_use = s.kv_pages_in_use,
                     .kv_pages_total = s.kv_pages_total,
                     .active = s.active,
                     .waiting = s.waiting,
                     .cached_sequences = s.cached_sequences,
                     .prefix_hits = s.prefix_hits};
  }

  void stop_pump() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wakeup_->notify();
    if (pump_.joinable()) pump_.join();
  }

  // Frames from the reading thread and the pump interleave whole.
  Status send(FrameType type, uint64_t id, std::string payload) {
    std::lock_guard lock(write_mu_);
    return write_frame(fd_, Frame{type, id, std::move(payload)});
  }

  const int fd_;
  serve::Service& service_;
  const RecipeCompiler& compile_;
  const HostOptions options_;
  std::mutex write_mu_;
  std::shared_ptr<serve::LoopWakeup> wakeup_ = std::make_shared<serve::LoopWakeup>();
  std::mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<serve::RequestHandle>> handles_;
  bool stop_ = false;
  std::thread pump_;
};

}  // namespace

Status serve_front(int fd, serve::Service& service, const Hello& hello,
                   const RecipeCompiler& compile, const HostOptions& options) {
  Host host(fd, service, compile, options);
  return host.run(hello);
}

}  // namespace synapse::worker
