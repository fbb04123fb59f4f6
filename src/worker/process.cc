// SPDX-License-Identifier: Apache-2.0
#include "worker/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <thread>

#include "base/os_error.h"
#include "worker/frame.h"

namespace synapse::worker {
namespace {

constexpr int kWorkerFd = 3;
constexpr std::chrono::milliseconds kPoll{100};
constexpr std::chrono::seconds kExitWait{5};

std::string describe_exit(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "signal " + std::to_string(sig) + " (" + signal_text(sig) + ")";
  }
  return "status " + std::to_string(status);
}

WorkerExit exit_of(int status) {
  WorkerExit exit;
  exit.how = describe_exit(status);
  if (WIFSIGNALED(status)) exit.signal = WTERMSIG(status);
  return exit;
}

// In the child between fork and exec: async-signal-safe calls only.
[[noreturn]] void exec_child(int fd, char* const* argv, pid_t parent) {
  if (fd == kWorkerFd) {
    ::fcntl(fd, F_SETFD, 0);               // keep it across exec
  } else if (::dup2(fd, kWorkerFd) < 0) {  // dup2's copy is not close-on-exec
    ::_exit(126);
  }
  // Nothing else of the front's crosses (a client's connection held open by a worker would
  // never see its end).
  if (::syscall(SYS_close_range, kWorkerFd + 1, ~0U, 0) != 0) {
    const long max = ::sysconf(_SC_OPEN_MAX);
    for (int i = kWorkerFd + 1; i < max; ++i) ::close(i);
  }
  // The kernel's out-of-memory killer takes a worker before the front (raising one's own score
  // needs no privilege); --worker-memory-limit kills it earlier, at the limit the user set.
  const int oom = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (oom >= 0) {
    const ssize_t written = ::write(oom, "1000", 4);
    (void)written;  // best effort: without /proc the limit still holds
    ::close(oom);
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(125);  // the front died before prctl took effect
  ::execv(argv[0], argv);
  ::_exit(127);
}

}  // namespace

WorkerExit reap(pid_t pid) {
  if (pid <= 0) return WorkerExit{.how = "no process"};
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + kExitWait;
  while (true) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return exit_of(status);
    if (r < 0 && errno != EINTR) {
      return WorkerExit{.how = std::string("not reaped: ") + errno_text(errno)};
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  WorkerExit exit = exit_of(status);
  exit.how += ", killed after it closed its socket but did not exit";
  exit.killed_by_front = true;
  return exit;
}

uint64_t oom_kills() {
  std::ifstream vmstat("/proc/vmstat");
  for (std::string line; std::getline(vmstat, line);) {
    if (line.rfind("oom_kill ", 0) == 0) return std::stoull(line.substr(9));
  }
  return 0;
}

void kill_and_reap(WorkerProcess& process) {
  if (process.pid > 0) {
    ::kill(process.pid, SIGKILL);
    reap(process.pid);
  }
  if (process.fd >= 0) ::close(process.fd);
  process = WorkerProcess{};
}

Result<StartedWorker> start_worker_process(const std::vector<std::string>& argv,
                                           std::chrono::milliseconds timeout,
                                           const std::atomic<bool>& abort) {
  if (argv.empty()) return Status(ErrorCode::kInvalidArgument, "no worker command line");
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return Status(ErrorCode::kIoError, std::string("socketpair: ") + errno_text(errno));
  }
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(sv[0]);
    ::close(sv[1]);
    return Status(ErrorCode::kResourceExhausted, std::string("fork: ") + errno_text(err));
  }
  if (pid == 0) exec_child(sv[1], args.data(), parent);
  ::close(sv[1]);
  WorkerProcess process{pid, sv[0]};
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (abort.load()) {
      kill_and_reap(process);
      return Status(ErrorCode::kUnavailable, "the server is shutting down");
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      kill_and_reap(process);
      return Status(ErrorCode::kUnavailable, "the worker process did not load its model within " +
                                                 std::to_string(timeout.count() / 1000) + " s");
    }
    pollfd p{process.fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min(left, kPoll).count()));
    if (ready < 0 && errno != EINTR) {
      const int err = errno;
      kill_and_reap(process);
      return Status(ErrorCode::kIoError, std::string("poll: ") + errno_text(err));
    }
    if (ready > 0) break;
  }
  Result<std::optional<Frame>> first = read_frame(process.fd);
  if (!first.ok() || !*first) {
    // It ended before its hello: loading failed (it said why on its stderr, the server's).
    ::close(process.fd);
    const std::string how = reap(process.pid).how;
    return Status(ErrorCode::kUnavailable,
                  "the worker process ended (" + how +
                      ") before its model was loaded; its messages are in the server's log");
  }
  if ((*first)->type != FrameType::kHello) {
    kill_and_reap(process);
    return Status(ErrorCode::kProtocolError, "the worker's first frame is not its hello");
  }
  Result<Hello> hello = decode_hello((*first)->payload);
  if (!hello.ok()) {
    kill_and_reap(process);
    return hello.status();
  }
  return StartedWorker{process, std::move(hello).value()};
}

uint64_t resident_bytes(pid_t pid) {
  std::ifstream statm("/proc/" + std::to_string(pid) + "/statm");
  uint64_t size_pages = 0;
  uint64_t resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  return resident_pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace synapse::worker
