// SPDX-License-Identifier: Apache-2.0
// The front's side of a model served by a worker process (`synapse serve --isolate`): a
// serve::ModelService whose engine runs in a child process it starts, talks to over a socket
// (frame.h) and supervises.
//
// Supervision: when the worker dies (a crash, a kill, an out-of-memory kill) every request in
// flight on it ends with a final event carrying `worker_crashed` (transient: retry), and the
// worker is started again after a short back-off (doubling from 100 ms up to 5 s while it keeps
// crashing); requests that arrive meanwhile wait for it. More than `crash_budget` crashes within
// `crash_window` mark the model unavailable for `cool_down` (requests answer `unavailable` with
// the time left), after which the next request starts it again. A request (known by its prompt)
// that was running at `quarantine_after` crashes it may have caused is refused with
// `quarantined` from then on, so one poison prompt cannot crash-loop the model: a crash of the
// worker's own (a signal other than SIGKILL, an exit), a kill for a hang or for memory (by the
// supervisor or the kernel's OOM killer) count; a SIGKILL from outside (an operator's kill -9)
// does not, since it says nothing about the requests. A worker that makes no engine step for
// `hang_timeout` while it has requests, or whose resident memory passes `memory_limit_bytes`,
// is killed and treated as crashed. Other models' workers are separate processes and are not
// affected by any of this.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "serve/model_service.h"
#include "worker/codec.h"

namespace synapse::worker {

struct WorkerServiceState;  // worker_service.cc

struct WorkerOptions {
  // The worker's command line, argv[0] the program; the connected socket is its fd 3.
  std::vector<std::string> argv;
  std::string model_name;                                   // for messages and logs
  std::chrono::milliseconds start_timeout{10 * 60 * 1000};  // loading the model included
  std::chrono::milliseconds hang_timeout{60 * 1000};
  uint64_t memory_limit_bytes = 0;  // resident set; 0: no limit
  size_t crash_budget = 3;
  std::chrono::milliseconds crash_window{60 * 1000};
  std::chrono::milliseconds cool_down{30 * 1000};
  size_t quarantine_after = 2;
  // How long a request waits for a worker being restarted before it is refused (unavailable).
  std::chrono::milliseconds restart_wait{30 * 1000};
};

class WorkerService final : public serve::ModelService {
 public:
  // Starts the worker and waits for its hello (the model loaded). Errors: the worker's exit
  // (its stderr is the server's) or start_timeout as unavailable; protocol_error for a worker of
  // another protocol version.
  static Result<std::unique_ptr<WorkerService>> start(WorkerOptions options);
  ~WorkerService() override;  // shutdown(0ms)
  WorkerService(const WorkerService&) = delete;
  WorkerService& operator=(const WorkerService&) = delete;

  Result<std::shared_ptr<serve::RequestHandle>> submit(serve::GenerationRequest request) override;
  uint32_t retry_after_s(serve::RequestClass c) const override;
  void shutdown(std::chrono::milliseconds grace) override;
  // The front's counters for this worker (crashes, restarts, quarantined requests, state) and
  // the worker's own service metrics (none while it is down).
  std::string render_prometheus() const override;
  const serve::ModelLimits& limits() const override;
  uint32_t n_embd() const override;
  uint64_t kv_capacity_bytes() const override;
  std::optional<serve::WorkerProcessInfo> worker() const override;
  // What the current worker said when it started.
  Hello hello() const;

 private:
  explicit WorkerService(std::shared_ptr<WorkerServiceState> state);
  std::shared_ptr<WorkerServiceState> state_;
};

}  // namespace synapse::worker
