// SPDX-License-Identifier: Apache-2.0
// Starting, watching and ending worker processes (POSIX): what WorkerService needs from the OS.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "worker/codec.h"

namespace synapse::worker {

struct WorkerProcess {
  pid_t pid = 0;
  int fd = -1;  // the front's end of the connected socket
};

struct StartedWorker {
  WorkerProcess process;
  Hello hello;
};

// Starts `argv` (argv[0] a path) with one end of a new socket pair as its fd 3 and no other
// descriptor of this process beyond 0-2; the child is killed if this process dies
// (PR_SET_PDEATHSIG). Waits for its hello for up to `timeout`, giving up early when `abort`
// turns true. Errors (the child killed and reaped): unavailable (it exited before saying hello,
// naming how; timeout; abort), protocol_error (its first frame was not a readable hello).
Result<StartedWorker> start_worker_process(const std::vector<std::string>& argv,
                                           std::chrono::milliseconds timeout,
                                           const std::atomic<bool>& abort);

// How a worker process ended.
struct WorkerExit {
  std::string how;               // "exit status 1", "signal 9 (Killed)"
  int signal = 0;                // the signal that ended it; 0 when it exited
  bool killed_by_front = false;  // reap() had to kill it
};

// Waits for `pid` to end (killing it after a few seconds if it has not) and says how it ended.
WorkerExit reap(pid_t pid);
// Processes the kernel's out-of-memory killer has killed since boot (/proc/vmstat's oom_kill);
// 0 when unknown.
uint64_t oom_kills();
// Kills, reaps and closes.
void kill_and_reap(WorkerProcess& process);

// The resident set of `pid` in bytes (/proc/PID/statm); 0 when it cannot be read.
uint64_t resident_bytes(pid_t pid);

}  // namespace synapse::worker
