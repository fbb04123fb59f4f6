// SPDX-License-Identifier: Apache-2.0
#include "worker/worker_service.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "base/hash.h"
#include "base/log.h"
#include "worker/frame.h"
#include "worker/process.h"

namespace synapse::worker {
namespace {

using Clock = serve::Clock;
using std::chrono::milliseconds;

constexpr milliseconds kTick{100};             // the supervisor's look at its workers
constexpr milliseconds kFirstBackOff{100};     // restart delay after a first crash ...
constexpr milliseconds kLongestBackOff{5000};  // ... doubling while it keeps crashing
constexpr milliseconds kMetricsWait{2000};
constexpr milliseconds kShutdownExtra{10000};  // past the grace, before a kill
constexpr size_t kMaxRemembered = 4096;        // prompts counted toward quarantine

enum class Phase : uint8_t { kStarting, kRunning, kRestarting, kUnavailable, kStopping, kStopped };

std::string_view phase_name(Phase p) {
  switch (p) {
    case Phase::kStarting:
    case Phase::kRestarting:
      return "restarting";
    case Phase::kRunning:
      return "running";
    case Phase::kUnavailable:
      return "unavailable";
    case Phase::kStopping:
    case Phase::kStopped:
      return "stopped";
  }
  return "stopped";
}

// The same request sent again (a client's retry) has the same prompt: that is what quarantine
// counts.
uint64_t fingerprint(const serve::GenerationRequest& request) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(request.prompt.data());
  return xxh3_64(std::span<const uint8_t>(bytes, request.prompt.size() * sizeof(int32_t)),
                 request.embedding ? 1 : 0);
}

uint32_t whole_seconds(Clock::duration d) {
  const auto s = std::chrono::ceil<std::chrono::seconds>(d).count();
  return static_cast<uint32_t>(std::clamp<int64_t>(s, 1, 60));
}

struct Flight {
  std::shared_ptr<serve::RequestHandle> handle;
  uint64_t fingerprint = 0;
  bool cancel_sent = false;
  bool started = false;  // running in the worker (a kStarted frame came), not queued
};

}  // namespace

struct WorkerServiceState {
  WorkerOptions options;

  mutable std::mutex mu;
  std::condition_variable cv;  // phase changes and replies
  Phase phase = Phase::kStarting;
  Hello hello;  // the current worker's
  // The first worker's limits, fixed for the service's life (every worker of the model reports
  // the same; the request layer reads them without a lock).
  serve::ModelLimits limits;
  uint32_t n_embd = 0;
  uint64_t kv_capacity_bytes = 0;
  WorkerProcess process;     // the current worker; pid 0 while none runs
  uint64_t incarnation = 0;  // which worker process `process` is (1, 2, ... )
  std::thread reader;        // reads the current worker's frames
  uint64_t next_id = 1;
  std::unordered_map<uint64_t, Flight> flights;
  std::unordered_map<uint64_t, std::optional<Status>> replies;
  std::unordered_map<uint64_t, std::optional<std::string>> metrics_replies;

  // Supervision.
  std::deque<Clock::time_point> recent_crashes;  // within crash_window
  uint64_t crashes = 0;
  uint64_t restarts = 0;
  uint64_t quarantine_refusals = 0;
  size_t crashes_in_a_row = 0;  // since a request last finished well
  Clock::time_point restart_at;
  Clock::time_point unavailable_until;
  Clock::time_point last_progress;
  uint64_t last_steps = 0;
  std::string kill_reason;                            // set when the supervisor kills the worker
  uint64_t oom_kills_at_start = 0;                    // the kernel's count when it started
  std::unordered_map<uint64_t, size_t> crashes_seen;  // prompt fingerprint -> crashes
  std::unordered_set<uint64_t> quarantine;
  std::atomic<bool> stopping{false};

  // Frames to the current worker; `write_fd` is -1 while none runs, so that no frame reaches a
  // closed (or reused) descriptor.
  std::mutex write_mu;
  int write_fd = -1;
  uint64_t write_incarnation = 0;

  std::shared_ptr<serve::LoopWakeup> wakeup = std::make_shared<serve::LoopWakeup>();
  std::thread supervisor;
  bool stop_supervisor = false;
  std::mutex join_mu;  // shutdown() joins the threads once, whoever calls it

  // Writes to the worker `incarnation` if it still runs; false otherwise.
  bool send(uint64_t for_incarnation, const Frame& frame) {
    std::lock_guard lock(write_mu);
    if (write_fd < 0 || write_incarnation != for_incarnation) return false;
    return write_frame(write_fd, frame).ok();
  }
};

namespace {

using State = WorkerServiceState;

void read_worker(const std::shared_ptr<State>& s, uint64_t incarnation);

// Starts a worker, waits for its hello and makes it the current one (under no lock: loading
// takes time). False when it could not start; `error` says why.
Status start_process(const std::shared_ptr<State>& s) {
  Result<StartedWorker> started =
      start_worker_process(s->options.argv, s->options.start_timeout, s->stopping);
  if (!started.ok()) return started.status();
  if (started->hello.protocol != kProtocolVersion) {
    kill_and_reap(started->process);
    return Status(ErrorCode::kProtocolError,
                  "the worker speaks protocol " + std::to_string(started->hello.protocol) +
                      ", this server " + std::to_string(kProtocolVersion));
  }
  std::lock_guard lock(s->mu);
  if (s->stop_supervisor || s->phase == Phase::kStopping || s->phase == Phase::kStopped) {
    kill_and_reap(started->process);
    return Status(ErrorCode::kUnavailable, "shutting down");
  }
  if (s->reader.joinable()) s->reader.join();  // the previous worker's, finished
  s->process = started->process;
  s->hello = started->hello;
  if (s->incarnation == 0) {
    s->limits = s->hello.limits;
    s->n_embd = s->hello.n_embd;
    s->kv_capacity_bytes = s->hello.kv_capacity_bytes;
  }
  ++s->incarnation;
  {
    std::lock_guard write_lock(s->write_mu);
    s->write_fd = s->process.fd;
    s->write_incarnation = s->incarnation;
  }
  s->phase = Phase::kRunning;
  s->last_progress = Clock::now();
  s->last_steps = 0;
  s->kill_reason.clear();
  s->oom_kills_at_start = oom_kills();
  const uint64_t incarnation = s->incarnation;
  s->reader = std::thread([s, incarnation] { read_worker(s, incarnation); });
  s->cv.notify_all();
  return ok_status();
}

serve::GenerationEvent crash_event(const State& s, const std::string& why) {
  serve::GenerationEvent event;
  event.final = true;
  event.finish_reason = serve::FinishReason::kError;
  event.error = Status(ErrorCode::kWorkerCrashed,
                       "the worker process of model '" + s.options.model_name + "' " + why +
                           " while running this request; it is being restarted: retry");
  return event;
}

// After the worker `incarnation` ended: fails what was in flight on it and decides what next.
void worker_ended(const std::shared_ptr<State>& s, uint64_t incarnation, const std::string& error) {
  WorkerProcess ended;
  {
    std::lock_guard lock(s->mu);
    ended = s->process;
  }
  // It sent what cannot be read: not trusted to go on.
  if (!error.empty() && ended.pid > 0) ::kill(ended.pid, SIGKILL);
  const WorkerExit exit = reap(ended.pid);
  {
    std::lock_guard write_lock(s->write_mu);
    if (s->write_incarnation == incarnation) s->write_fd = -1;
    ::close(ended.fd);
  }
  std::vector<Flight> failed;
  std::string why;
  {
    std::lock_guard lock(s->mu);
    s->process = WorkerProcess{};
    why = !s->kill_reason.empty() ? "was killed: " + s->kill_reason
          : !error.empty()        ? "sent a bad frame (" + error + ") and was killed"
                                  : "stopped (" + exit.how + ")";
    // Whether the requests running on it may have caused its death, for quarantine: it crashed
    // by itself (any signal but SIGKILL, or an exit), misbehaved, or was killed for its hang or
    // its memory by the supervisor or, as far as the kernel's count tells, by the OOM killer. A
    // SIGKILL from elsewhere (an operator's kill -9) says nothing about them.
    const bool requests_suspect = exit.signal != SIGKILL || exit.killed_by_front ||
                                  !s->kill_reason.empty() || !error.empty() ||
                                  oom_kills() > s->oom_kills_at_start;
    for (auto& [id, flight] : s->flights) failed.push_back(std::move(flight));
    s->flights.clear();
    for (auto& [id, reply] : s->replies) {
      if (!reply) reply = crash_event(*s, why).error;
    }
    for (auto& [id, reply] : s->metrics_replies) {
      if (!reply) reply = std::string();
    }
    if (s->phase == Phase::kStopping) {
      s->phase = Phase::kStopped;
    } else {
      const auto now = Clock::now();
      ++s->crashes;
      ++s->crashes_in_a_row;
      s->recent_crashes.push_back(now);
      while (!s->recent_crashes.empty() &&
             now - s->recent_crashes.front() > s->options.crash_window) {
        s->recent_crashes.pop_front();
      }
      for (const Flight& f : failed) {
        // A request waiting in the worker's queue cannot have crashed it.
        if (!f.started || !requests_suspect) continue;
        if (++s->crashes_seen[f.fingerprint] >= s->options.quarantine_after &&
            s->quarantine.size() < kMaxRemembered) {
          s->quarantine.insert(f.fingerprint);
        }
      }
      if (s->crashes_seen.size() > kMaxRemembered) s->crashes_seen.clear();
      if (s->recent_crashes.size() >= s->options.crash_budget) {
        s->phase = Phase::kUnavailable;
        s->unavailable_until = now + s->options.cool_down;
        log_error("model '{}': worker {} {}; {} crashes within {} s: unavailable for {} s",
                  s->options.model_name, ended.pid, why, s->recent_crashes.size(),
                  s->options.crash_window.count() / 1000, s->options.cool_down.count() / 1000);
      } else {
        const auto back_off = std::min(
            kLongestBackOff, kFirstBackOff * (1 << std::min<size_t>(s->crashes_in_a_row - 1, 8)));
        s->phase = Phase::kRestarting;
        s->restart_at = now + back_off;
        log_error("model '{}': worker {} {}; {} request(s) failed; restarting in {} ms",
                  s->options.model_name, ended.pid, why, failed.size(), back_off.count());
      }
    }
    s->cv.notify_all();
  }
  for (Flight& f : failed) f.handle->push(crash_event(*s, why));
  s->wakeup->notify();
}

void dispatch(const std::shared_ptr<State>& s, const Frame& f, std::string& error) {
  switch (f.type) {
    case FrameType::kEvent: {
      Result<serve::GenerationEvent> event = decode_event(f.payload);
      if (!event.ok()) {
        error = event.status().to_string();
        return;
      }
      std::shared_ptr<serve::RequestHandle> handle;
      {
        std::lock_guard lock(s->mu);
        const auto found = s->flights.find(f.request_id);
        if (found == s->flights.end()) return;
        handle = found->second.handle;
        s->last_progress = Clock::now();
        if (event->final) {
          s->flights.erase(found);
          if (event->finish_reason != serve::FinishReason::kError) s->crashes_in_a_row = 0;
        }
      }
      handle->push(std::move(event).value());
      return;
    }
    case FrameType::kSubmitReply: {
      Status status;
      const Status decoded = decode_status(f.payload, status);
      if (!decoded.ok()) {
        error = decoded.to_string();
        return;
      }
      std::lock_guard lock(s->mu);
      const auto found = s->replies.find(f.request_id);
      if (found != s->replies.end()) found->second = std::move(status);
      s->cv.notify_all();
      return;
    }
    case FrameType::kStarted: {
      std::lock_guard lock(s->mu);
      const auto found = s->flights.find(f.request_id);
      if (found != s->flights.end()) found->second.started = true;
      s->last_progress = Clock::now();
      return;
    }
    case FrameType::kHeartbeat: {
      Result<Heartbeat> beat = decode_heartbeat(f.payload);
      if (!beat.ok()) {
        error = beat.status().to_string();
        return;
      }
      std::lock_guard lock(s->mu);
      if (beat->steps != s->last_steps || s->flights.empty()) s->last_progress = Clock::now();
      s->last_steps = beat->steps;
      return;
    }
    case FrameType::kMetricsReply: {
      std::lock_guard lock(s->mu);
      const auto found = s->metrics_replies.find(f.request_id);
      if (found != s->metrics_replies.end()) found->second = f.payload;
      s->cv.notify_all();
      return;
    }
    default:
      error = "a frame of type " + std::to_string(static_cast<int>(f.type)) +
              " after the hello, which a worker does not send";
  }
}

void read_worker(const std::shared_ptr<State>& s, uint64_t incarnation) {
  int fd = -1;
  {
    std::lock_guard lock(s->mu);
    fd = s->process.fd;
  }
  std::string error;
  while (error.empty()) {
    Result<std::optional<Frame>> frame = read_frame(fd);
    if (!frame.ok()) {
      // A read cut off inside a frame is how a killed worker usually ends: not a bad frame.
      if (frame.status().code() == ErrorCode::kProtocolError) error = frame.status().to_string();
      break;
    }
    if (!*frame) break;
    dispatch(s, **frame, error);
  }
  worker_ended(s, incarnation, error);
}

// The supervisor: forwards cancellations, kills a hung or oversized worker, restarts a dead one.
void supervise(const std::shared_ptr<State>& s) {
  while (true) {
    s->wakeup->wait_until(Clock::now() + kTick);
    std::vector<uint64_t> cancels;
    uint64_t incarnation = 0;
    bool restart = false;
    {
      std::lock_guard lock(s->mu);
      if (s->stop_supervisor) return;
      const auto now = Clock::now();
      incarnation = s->incarnation;
      for (auto& [id, flight] : s->flights) {
        if (!flight.cancel_sent && flight.handle->cancel_requested()) {
          flight.cancel_sent = true;
          cancels.push_back(id);
        }
      }
      if (s->phase == Phase::kRunning && s->kill_reason.empty()) {
        if (!s->flights.empty() && now - s->last_progress > s->options.hang_timeout) {
          s->kill_reason = "it made no engine step for " +
                           std::to_string(s->options.hang_timeout.count()) +
                           " ms with requests in flight";
        } else if (s->options.memory_limit_bytes > 0) {
          const uint64_t rss = resident_bytes(s->process.pid);
          if (rss > s->options.memory_limit_bytes) {
            s->kill_reason = "its resident memory (" + std::to_string(rss >> 20) +
                             " MiB) passed its limit (" +
                             std::to_string(s->options.memory_limit_bytes >> 20) + " MiB)";
          }
        }
        if (!s->kill_reason.empty() && s->process.pid > 0) ::kill(s->process.pid, SIGKILL);
      }
      if (s->phase == Phase::kUnavailable && now >= s->unavailable_until) {
        s->recent_crashes.clear();  // a fresh budget after the cool-down
        s->phase = Phase::kRestarting;
        s->restart_at = now;
      }
      if (s->phase == Phase::kRestarting && now >= s->restart_at) {
        s->phase = Phase::kStarting;
        restart = true;
      }
    }
    for (uint64_t id : cancels) s->send(incarnation, Frame{FrameType::kCancel, id, {}});
    if (restart) {
      const Status started = start_process(s);
      std::lock_guard lock(s->mu);
      if (started.ok()) {
        ++s->restarts;
        log_info("model '{}': worker {} started", s->options.model_name, s->process.pid);
      } else if (s->phase == Phase::kStarting) {
        // As a crash: counted against the budget, tried again after the back-off.
        const auto now = Clock::now();
        ++s->crashes;
        ++s->crashes_in_a_row;
        s->recent_crashes.push_back(now);
        if (s->recent_crashes.size() >= s->options.crash_budget) {
          s->phase = Phase::kUnavailable;
          s->unavailable_until = now + s->options.cool_down;
        } else {
          s->phase = Phase::kRestarting;
          s->restart_at = now + kLongestBackOff;
        }
        log_error("model '{}': the worker did not start: {}", s->options.model_name,
                  started.to_string());
        s->cv.notify_all();
      }
    }
  }
}

}  // namespace

WorkerService::WorkerService(std::shared_ptr<WorkerServiceState> state)
    : state_(std::move(state)) {}

Result<std::unique_ptr<WorkerService>> WorkerService::start(WorkerOptions options) {
  auto s = std::make_shared<State>();
  s->options = std::move(options);
  SYN_RETURN_IF_ERROR(start_process(s));
  s->supervisor = std::thread([s] { supervise(s); });
  return std::unique_ptr<WorkerService>(new WorkerService(s));
}

WorkerService::~WorkerService() { shutdown(milliseconds(0)); }

Result<std::shared_ptr<serve::RequestHandle>> WorkerService::submit(
    serve::GenerationRequest request) {
  State& s = *state_;
  const uint64_t print = fingerprint(request);
  std::unique_lock lock(s.mu);
  if (s.quarantine.count(print) != 0) {
    ++s.quarantine_refusals;
    return Status(ErrorCode::kQuarantined,
                  "this request was running at " + std::to_string(s.options.quarantine_after) +
                      " crashes of model '" + s.options.model_name +
                      "''s worker process; it is refused so that it cannot crash it again");
  }
  const auto wait_until = Clock::now() + s.options.restart_wait;
  while (s.phase == Phase::kStarting || s.phase == Phase::kRestarting) {
    if (s.cv.wait_until(lock, wait_until) == std::cv_status::timeout) {
      return Status(ErrorCode::kUnavailable,
                    "model '" + s.options.model_name + "' is restarting its worker process");
    }
  }
  if (s.phase == Phase::kUnavailable) {
    return Status(ErrorCode::kUnavailable,
                  "model '" + s.options.model_name + "' crashed " +
                      std::to_string(s.options.crash_budget) + " times within " +
                      std::to_string(s.options.crash_window.count() / 1000) +
                      " s; it is unavailable for another " +
                      std::to_string(whole_seconds(s.unavailable_until - Clock::now())) + " s");
  }
  if (s.phase != Phase::kRunning) {
    return Status(ErrorCode::kUnavailable, "the server is shutting down");
  }
  const uint64_t id = s.next_id++;
  auto handle = std::make_shared<serve::RequestHandle>(request.id, request.request_class, s.wakeup);
  if (s.flights.empty()) s.last_progress = Clock::now();
  s.flights[id] = Flight{handle, print};
  s.replies[id] = std::nullopt;
  const uint64_t incarnation = s.incarnation;
  lock.unlock();
  const bool sent = s.send(incarnation, Frame{FrameType::kSubmit, id, encode_request(request)});
  lock.lock();
  if (!sent && !s.replies[id]) {
    // Not written: the worker is gone or going; its end fails the flight if it has not yet.
    s.replies[id] =
        Status(ErrorCode::kWorkerCrashed, "the worker process of model '" + s.options.model_name +
                                              "' stopped before it took this request; retry");
  }
  s.cv.wait(lock, [&] { return s.replies[id].has_value(); });
  Status reply = std::move(*s.replies[id]);
  s.replies.erase(id);
  if (!reply.ok()) {
    s.flights.erase(id);
    return reply;
  }
  return handle;
}

uint32_t WorkerService::retry_after_s(serve::RequestClass) const {
  std::lock_guard lock(state_->mu);
  if (state_->phase == Phase::kUnavailable) {
    return whole_seconds(state_->unavailable_until - Clock::now());
  }
  return 1;
}

void WorkerService::shutdown(milliseconds grace) {
  State& s = *state_;
  uint64_t incarnation = 0;
  bool running = false;
  {
    std::lock_guard lock(s.mu);
    if (s.phase == Phase::kStopping || s.phase == Phase::kStopped) {
      // Another caller stops it; wait below with everyone.
    } else {
      running = s.phase == Phase::kRunning;
      s.phase = running ? Phase::kStopping : Phase::kStopped;
      incarnation = s.incarnation;
    }
    s.stopping = true;
    s.cv.notify_all();
  }
  if (running) {
    s.send(incarnation,
           Frame{FrameType::kShutdown, 0,
                 encode_u64(static_cast<uint64_t>(std::max<int64_t>(grace.count(), 0)))});
  }
  {
    std::unique_lock lock(s.mu);
    if (!s.cv.wait_for(lock, grace + kShutdownExtra, [&] { return s.phase == Phase::kStopped; })) {
      if (s.process.pid > 0) ::kill(s.process.pid, SIGKILL);  // the reader reaps it
      s.cv.wait(lock, [&] { return s.phase == Phase::kStopped; });
    }
    s.stop_supervisor = true;
  }
  s.wakeup->notify();
  std::lock_guard join_lock(s.join_mu);
  if (s.supervisor.joinable()) s.supervisor.join();
  std::thread reader;
  {
    std::lock_guard lock(s.mu);
    reader = std::move(s.reader);
  }
  if (reader.joinable()) reader.join();
}

std::string WorkerService::render_prometheus() const {
  State& s = *state_;
  std::string worker_text;
  uint64_t id = 0;
  uint64_t incarnation = 0;
  {
    std::lock_guard lock(s.mu);
    if (s.phase == Phase::kRunning) {
      id = s.next_id++;
      incarnation = s.incarnation;
      s.metrics_replies[id] = std::nullopt;
    }
  }
  if (id != 0) {
    const bool sent = s.send(incarnation, Frame{FrameType::kMetricsRequest, id, {}});
    std::unique_lock lock(s.mu);
    if (sent) {
      s.cv.wait_for(lock, kMetricsWait, [&] { return s.metrics_replies[id].has_value(); });
    }
    worker_text = s.metrics_replies[id].value_or("");
    s.metrics_replies.erase(id);
  }
  std::lock_guard lock(s.mu);
  std::string out;
  out += "# HELP synapse_worker_crashes_total Times the model's worker process died unasked.\n";
  out += "# TYPE synapse_worker_crashes_total counter\n";
  out += "synapse_worker_crashes_total " + std::to_string(s.crashes) + "\n";
  out += "# HELP synapse_worker_restarts_total Times the worker process was started again.\n";
  out += "# TYPE synapse_worker_restarts_total counter\n";
  out += "synapse_worker_restarts_total " + std::to_string(s.restarts) + "\n";
  out +=
      "# HELP synapse_worker_quarantined Requests refused as quarantined: prompts that were "
      "in flight at repeated crashes.\n";
  out += "# TYPE synapse_worker_quarantined gauge\n";
  out += "synapse_worker_quarantined " + std::to_string(s.quarantine.size()) + "\n";
  out += "# HELP synapse_worker_quarantine_refusals_total Requests refused as quarantined.\n";
  out += "# TYPE synapse_worker_quarantine_refusals_total counter\n";
  out += "synapse_worker_quarantine_refusals_total " + std::to_string(s.quarantine_refusals) + "\n";
  out += "# HELP synapse_worker_up Whether the worker process is running (1) or not (0).\n";
  out += "# TYPE synapse_worker_up gauge\n";
  out += std::string("synapse_worker_up ") + (s.phase == Phase::kRunning ? "1" : "0") + "\n";
  return out + worker_text;
}

const serve::ModelLimits& WorkerService::limits() const { return state_->limits; }

uint32_t WorkerService::n_embd() const { return state_->n_embd; }

uint64_t WorkerService::kv_capacity_bytes() const { return state_->kv_capacity_bytes; }

std::optional<serve::WorkerProcessInfo> WorkerService::worker() const {
  std::lock_guard lock(state_->mu);
  serve::WorkerProcessInfo info;
  info.pid = state_->process.pid;
  info.state = std::string(phase_name(state_->phase));
  info.crashes = state_->crashes;
  info.restarts = state_->restarts;
  info.quarantined = state_->quarantine.size();
  return info;
}

Hello WorkerService::hello() const {
  std::lock_guard lock(state_->mu);
  return state_->hello;
}

}  // namespace synapse::worker
