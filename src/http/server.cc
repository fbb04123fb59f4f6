// SPDX-License-Identifier: Apache-2.0
#include "http/server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/fail_point.h"
#include "base/log.h"

namespace synapse::http {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr size_t kReadChunkBytes = 64 << 10;
constexpr auto kLingerTime = 2s;  // reading and dropping input after an error answer
constexpr auto kSweepInterval = 100ms;

// The states of a connection. The loop thread owns every connection except while kBusy, when
// exactly one handler thread does.
enum class Phase { kIdle, kHead, kBody, kBusy, kLingering };

struct Connection {
  int fd = -1;
  std::string peer;
  int peer_port = 0;
  Phase phase = Phase::kHead;
  std::string in;  // received and not yet parsed (a head in progress, pipelined requests)
  RequestHead head;
  BodyReader body;
  Clock::time_point phase_start;
  Clock::time_point deadline;
  size_t served = 0;
};

bool peer_closed(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

// Writes all of `data`; false on an error, a closed peer, or no progress for `timeout`.
bool send_all(int fd, std::string_view data, std::chrono::milliseconds timeout) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      const int r = ::poll(&p, 1, static_cast<int>(timeout.count()));
      if (r <= 0 || (p.revents & (POLLERR | POLLHUP)) != 0) return false;
      continue;
    }
    return false;
  }
  return true;
}

std::string status_line(int status) {
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason_phrase(status)) + "\r\n";
}

// The head of a response: its status, fields, framing and connection option.
std::string response_head(const Response& res, bool keep_alive, bool chunked,
                          std::optional<size_t> content_length) {
  std::string out = status_line(res.status);
  for (const auto& [name, value] : res.headers.fields()) {
    if (equals_ignore_case(name, "Content-Length") || equals_ignore_case(name, "Connection") ||
        equals_ignore_case(name, "Transfer-Encoding")) {
      continue;  // the server frames the message itself
    }
    out += name + ": " + value + "\r\n";
  }
  if (content_length) out += "Content-Length: " + std::to_string(*content_length) + "\r\n";
  if (chunked) out += "Transfer-Encoding: chunked\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  out += "\r\n";
  return out;
}

// Enough descriptors for the connection cap: the soft limit is often 1024.
void raise_descriptor_limit(size_t wanted) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= wanted) return;
  limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, wanted);
  ::setrlimit(RLIMIT_NOFILE, &limit);
}

// Writes a streaming response's chunks as the producer gives them.
class SocketSink final : public StreamSink {
 public:
  SocketSink(int fd, bool chunked, std::chrono::milliseconds timeout)
      : fd_(fd), chunked_(chunked), timeout_(timeout) {}

  bool write(std::string_view data) override {
    if (failed_) return false;
    if (data.empty()) return true;
    // Test-only: a slow writer, so that shutdown's wait for writes is exercised every time.
    static const int64_t delay_ms = fail_point_value("http.write_delay_ms");
    if (delay_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    }
    if (!chunked_) return ok(send_all(fd_, data, timeout_));
    char size[24];
    const int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    std::string chunk;
    chunk.reserve(static_cast<size_t>(n) + data.size() + 2);
    chunk.append(size, static_cast<size_t>(n)).append(data).append("\r\n");
    return ok(send_all(fd_, chunk, timeout_));
  }
  bool client_gone() override { return peer_closed(fd_); }
  bool finish() {
    if (failed_) return false;
    return !chunked_ || ok(send_all(fd_, "0\r\n\r\n", timeout_));
  }
  bool failed() const { return failed_; }

 private:
  bool ok(bool sent) {
    failed_ = failed_ || !sent;
    return sent;
  }
  int fd_;
  bool chunked_;
  std::chrono::milliseconds timeout_;
  bool failed_ = false;
};

}  // namespace

struct Server::Impl {
  ServerOptions options;
  ServerHooks hooks;
  int listen_fd = -1;
  int epoll_fd = -1;
  int wake_fd = -1;
  std::thread loop_thread;
  std::vector<std::thread> workers;

  // Owned by the loop thread.
  std::unordered_map<int, std::unique_ptr<Connection>> connections;
  std::unordered_map<std::string, size_t> per_client;
  bool listener_closed = false;
  Clock::time_point last_sweep;

  // Shared between the loop and the handler threads.
  mutable std::mutex mu;
  std::condition_variable work_cv;  // handler threads wait for work
  std::condition_variable idle_cv;  // wait_idle waits for busy == 0
  std::deque<Connection*> ready;    // complete requests waiting for a handler thread
  std::deque<std::pair<Connection*, bool>> returned;  // answered: (connection, keep it open)
  size_t busy = 0;                                    // connections dispatched and not yet returned
  std::atomic<bool> shutting_down{false};
  std::atomic<bool> cutting{false};  // stop(): busy connections are being cut
  bool workers_stop = false;
  std::atomic<bool> loop_stop{false};

  void wake() const {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_fd, &one, sizeof one);
  }

  Status listen_on(int& port_out);
  void loop();
  void accept_all();
  void on_readable(Connection& c);
  void process(Connection& c);
  void dispatch(Connection& c);
  void answer_and_linger(Connection& c, int status, std::string_view code,
                         const std::string& message, const Request* request = nullptr);
  void answer_and_linger(Connection& c, const Response& res, const Request* request);
  void close_connection(int fd);
  void take_returned();
  void sweep(Clock::time_point now);
  void apply_shutdown();
  void watch(Connection& c) const {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = c.fd;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c.fd, &ev);
  }

  void worker();
  bool serve_one(Connection& c);
};

Server::Server(ServerOptions options, ServerHooks hooks) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  impl_->hooks = std::move(hooks);
}

Server::~Server() { stop(); }

Status Server::Impl::listen_on(int& port_out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(options.port);
  const std::string where = options.host + ":" + port;
  if (::getaddrinfo(options.host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) {
    return Status(ErrorCode::kUnavailable, "cannot resolve " + where);
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    // SO_REUSEADDR only: SO_REUSEPORT would let a second server bind the same port and
    // silently take half the connections.
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) return Status(ErrorCode::kUnavailable, "cannot listen on " + where);
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  port_out = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                               : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  listen_fd = fd;
  return ok_status();
}

Status Server::start() {
  Impl& s = *impl_;
  raise_descriptor_limit(s.options.max_connections + 256);
  SYN_RETURN_IF_ERROR(s.listen_on(port_));
  s.epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  s.wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s.epoll_fd < 0 || s.wake_fd < 0) {
    return Status(ErrorCode::kUnavailable, std::string("epoll: ") + std::strerror(errno));
  }
  for (int fd : {s.listen_fd, s.wake_fd}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(s.epoll_fd, EPOLL_CTL_ADD, fd, &ev);
  }
  s.last_sweep = Clock::now();
  for (int i = 0; i < std::max(1, s.options.threads); ++i)
    s.workers.emplace_back([&s] { s.worker(); });
  s.loop_thread = std::thread([&s] { s.loop(); });
  return ok_status();
}

void Server::begin_shutdown() {
  if (!impl_->loop_thread.joinable()) return;
  impl_->shutting_down = true;
  impl_->wake();
}

bool Server::wait_idle(Clock::time_point deadline) {
  Impl& s = *impl_;
  std::unique_lock lock(s.mu);
  return s.idle_cv.wait_until(lock, deadline, [&s] { return s.busy == 0; });
}

void Server::stop() {
  Impl& s = *impl_;
  if (!s.loop_thread.joinable()) return;
  s.shutting_down = true;
  s.cutting = true;
  s.wake();
  // The loop cuts the busy connections (their handlers see writes fail and the client gone);
  // wait for the handlers to hand them back, then stop everything.
  {
    std::unique_lock lock(s.mu);
    s.idle_cv.wait(lock, [&s] { return s.busy == 0; });
    s.workers_stop = true;
  }
  s.work_cv.notify_all();
  for (std::thread& t : s.workers) t.join();
  s.workers.clear();
  s.loop_stop = true;
  s.wake();
  s.loop_thread.join();
  for (auto& [fd, c] : s.connections) ::close(fd);
  s.connections.clear();
  if (s.listen_fd >= 0 && !s.listener_closed) ::close(s.listen_fd);
  ::close(s.epoll_fd);
  ::close(s.wake_fd);
}

void Server::Impl::loop() {
  std::vector<epoll_event> events(128);
  while (!loop_stop) {
    const int n = ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()),
                               static_cast<int>(kSweepInterval.count()));
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<size_t>(i)].data.fd;
      if (fd == listen_fd) {
        accept_all();
      } else if (fd == wake_fd) {
        uint64_t count = 0;
        [[maybe_unused]] const ssize_t r = ::read(wake_fd, &count, sizeof count);
      } else if (auto it = connections.find(fd); it != connections.end()) {
        on_readable(*it->second);
      }
    }
    take_returned();
    if (shutting_down) apply_shutdown();
    const Clock::time_point now = Clock::now();
    if (now - last_sweep >= kSweepInterval) sweep(now);
  }
}

void Server::Impl::accept_all() {
  for (;;) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len,
                             SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // EAGAIN, or out of descriptors: try again on the next event
    }
    auto c = std::make_unique<Connection>();
    c->fd = fd;
    char text[INET6_ADDRSTRLEN] = {0};
    if (addr.ss_family == AF_INET6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
      ::inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
      c->peer_port = ntohs(a->sin6_port);
    } else {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
      ::inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
      c->peer_port = ntohs(a->sin_port);
    }
    c->peer = text;
    int yes = 1;  // tokens go out as they come, not when Nagle's algorithm lets them
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    c->phase_start = Clock::now();
    c->deadline = c->phase_start + std::chrono::milliseconds(options.header_timeout_ms);
    Connection& conn = *c;
    connections.emplace(fd, std::move(c));
    size_t& from_client = per_client[conn.peer];
    ++from_client;
    if (connections.size() > options.max_connections) {
      answer_and_linger(conn, 503, "too_many_connections",
                        "the server has " + std::to_string(options.max_connections) +
                            " connections open; try again later");
      continue;
    }
    if (from_client > options.max_connections_per_client) {
      answer_and_linger(conn, 429, "too_many_connections",
                        "this client has " + std::to_string(options.max_connections_per_client) +
                            " connections open; close some or try again later");
      continue;
    }
    watch(conn);
  }
}

void Server::Impl::on_readable(Connection& c) {
  if (c.phase == Phase::kBusy) return;  // not watched while busy; a stale event
  char buf[kReadChunkBytes];
  // Bounded per event, so that one fast client cannot starve the others.
  for (int reads = 0; reads < 16; ++reads) {
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n > 0) {
      if (c.phase == Phase::kLingering) continue;  // dropped
      c.in.append(buf, static_cast<size_t>(n));
      process(c);
      if (c.phase == Phase::kBusy) return;  // the rest waits until this request is answered
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    close_connection(c.fd);  // end of stream or an error: the client is gone
    return;
  }
}

void Server::Impl::process(Connection& c) {
  const Clock::time_point now = Clock::now();
  if (c.phase == Phase::kIdle && !c.in.empty()) {
    c.phase = Phase::kHead;
    c.phase_start = now;
    c.deadline = now + std::chrono::milliseconds(options.header_timeout_ms);
  }
  if (c.phase == Phase::kHead) {
    HeadParse parsed = parse_request_head(c.in, options.parser);
    if (parsed.state == HeadParse::State::kIncomplete) return;
    if (parsed.state == HeadParse::State::kError) {
      const int status = parsed.error.http_status;
      const std::string_view code = status == 413   ? "request_too_large"
                                    : status == 431 ? "headers_too_large"
                                    : status == 414 ? "uri_too_long"
                                                    : "invalid_http";
      return answer_and_linger(c, status, code, parsed.error.message);
    }
    c.in.erase(0, parsed.consumed);
    c.head = std::move(parsed.head);
    c.head.request.remote_addr = c.peer;
    c.head.request.remote_port = c.peer_port;
    if (hooks.gate) {
      if (std::optional<Response> refused = hooks.gate(c.head.request)) {
        return answer_and_linger(c, *refused, &c.head.request);
      }
    }
    if (c.head.expect_continue) {
      // The client waits for this before sending its body; tiny, so one non-blocking send.
      const std::string_view cont = "HTTP/1.1 100 Continue\r\n\r\n";
      [[maybe_unused]] const ssize_t n = ::send(c.fd, cont.data(), cont.size(), MSG_NOSIGNAL);
    }
    c.body = BodyReader(c.head, options.parser.max_body_bytes);
    c.phase = Phase::kBody;
    c.phase_start = now;
    c.deadline = now + std::chrono::milliseconds(options.body_timeout_ms);
  }
  if (c.phase == Phase::kBody) {
    const BodyReader::Step step = c.body.feed(c.in);
    c.in.erase(0, step.consumed);
    if (step.failed) {
      const ProtocolError& e = c.body.error();
      return answer_and_linger(c, e.http_status,
                               e.http_status == 413 ? "request_too_large" : "invalid_http",
                               e.message, &c.head.request);
    }
    if (!step.done) {
      // A second more for every body_min_rate bytes received: a client must keep up at least
      // that rate once the initial time is spent.
      const auto earned = std::chrono::milliseconds(c.body.body_bytes() * 1000 /
                                                    std::max<size_t>(1, options.body_min_rate));
      c.deadline = c.phase_start + std::chrono::milliseconds(options.body_timeout_ms) + earned;
      return;
    }
    dispatch(c);
  }
}

void Server::Impl::dispatch(Connection& c) {
  c.phase = Phase::kBusy;
  ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c.fd, nullptr);
  {
    std::lock_guard lock(mu);
    ++busy;
    ready.push_back(&c);
  }
  work_cv.notify_one();
}

void Server::Impl::answer_and_linger(Connection& c, int status, std::string_view code,
                                     const std::string& message, const Request* request) {
  Response res = hooks.error ? hooks.error(status, code, message) : Response{};
  if (!hooks.error) {
    res.status = status;
    res.set_content(message + "\n", "text/plain; charset=utf-8");
  }
  answer_and_linger(c, res, request);
}

void Server::Impl::answer_and_linger(Connection& c, const Response& res, const Request* request) {
  const std::string out = response_head(res, false, false, res.body.size()) + res.body;
  // Small answers on a connection that has sent nothing back yet: one send fits the buffer.
  [[maybe_unused]] const ssize_t n = ::send(c.fd, out.data(), out.size(), MSG_NOSIGNAL);
  if (hooks.observer) hooks.observer(request != nullptr ? *request : Request{}, res.status);
  // Closing with unread input would reset the connection and could destroy the answer before
  // the client reads it: half-close, then read and drop what still comes for a short while.
  ::shutdown(c.fd, SHUT_WR);
  c.phase = Phase::kLingering;
  c.in.clear();
  c.in.shrink_to_fit();
  c.body = BodyReader();
  c.deadline = Clock::now() + kLingerTime;
}

void Server::Impl::close_connection(int fd) {
  auto it = connections.find(fd);
  if (it == connections.end()) return;
  if (auto pc = per_client.find(it->second->peer); pc != per_client.end() && --pc->second == 0) {
    per_client.erase(pc);
  }
  ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
  ::close(fd);
  connections.erase(it);
}

void Server::Impl::take_returned() {
  std::deque<std::pair<Connection*, bool>> done;
  {
    std::lock_guard lock(mu);
    done.swap(returned);
  }
  for (auto [c, keep] : done) {
    if (!keep || shutting_down) {
      close_connection(c->fd);
      continue;
    }
    c->phase = Phase::kIdle;
    c->phase_start = Clock::now();
    c->deadline = c->phase_start + std::chrono::milliseconds(options.idle_timeout_ms);
    watch(*c);
    process(*c);  // a pipelined request may be complete already
  }
  if (cutting) {
    // stop(): the handlers still answering see their writes fail and their client gone.
    for (auto& [fd, c] : connections) {
      if (c->phase == Phase::kBusy) ::shutdown(fd, SHUT_RDWR);
    }
  }
}

void Server::Impl::sweep(Clock::time_point now) {
  last_sweep = now;
  std::vector<int> expired;
  for (auto& [fd, c] : connections) {
    if (c->phase != Phase::kBusy && now >= c->deadline) expired.push_back(fd);
  }
  for (int fd : expired) {
    Connection& c = *connections.at(fd);
    switch (c.phase) {
      case Phase::kHead:
        answer_and_linger(c, 408, "request_timeout",
                          "the request head did not arrive within " +
                              std::to_string(options.header_timeout_ms) + " ms");
        break;
      case Phase::kBody:
        answer_and_linger(c, 408, "request_timeout",
                          "the request body arrived slower than " +
                              std::to_string(options.body_min_rate) + " bytes/s",
                          &c.head.request);
        break;
      default:  // idle keep-alive, lingering
        close_connection(fd);
        break;
    }
  }
}

void Server::Impl::apply_shutdown() {
  if (!listener_closed) {
    listener_closed = true;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, nullptr);
    ::close(listen_fd);
  }
  std::vector<int> to_close;
  for (auto& [fd, c] : connections) {
    if (c->phase == Phase::kIdle || (c->phase == Phase::kHead && c->in.empty())) {
      to_close.push_back(fd);
    }
  }
  for (int fd : to_close) close_connection(fd);
  for (auto& [fd, c] : connections) {
    if (c->phase == Phase::kHead || c->phase == Phase::kBody) {
      answer_and_linger(*c, 503, "unavailable", "the server is shutting down");
    }
  }
}

void Server::Impl::worker() {
  for (;;) {
    Connection* c = nullptr;
    {
      std::unique_lock lock(mu);
      work_cv.wait(lock, [this] { return workers_stop || !ready.empty(); });
      if (ready.empty()) return;
      c = ready.front();
      ready.pop_front();
    }
    const bool keep = serve_one(*c);
    {
      std::lock_guard lock(mu);
      returned.emplace_back(c, keep);
      --busy;
    }
    idle_cv.notify_all();
    wake();
  }
}

// Runs one request and writes its response; whether the connection may carry another.
bool Server::Impl::serve_one(Connection& c) {
  Request req = std::move(c.head.request);
  req.body = c.body.take_body();
  c.body = BodyReader();
  const int fd = c.fd;
  req.peer_closed = [fd] { return peer_closed(fd); };
  const bool http10 = c.head.http10;
  const bool head_only = req.method == "HEAD";
  ++c.served;
  bool keep = c.head.keep_alive && !shutting_down && c.served < options.max_requests_per_connection;

  Response res;
  try {
    hooks.handler(req, res);
  } catch (const std::exception& e) {
    log_error("http: {} {}: {}", req.method, req.path, e.what());
    res = hooks.error ? hooks.error(500, "internal", "internal error") : Response{500};
  }
  const auto timeout = std::chrono::milliseconds(options.write_timeout_ms);
  bool ok = true;
  if (res.producer && !head_only) {
    // HTTP/1.0 has no chunked coding: the stream ends when the connection does.
    const bool chunked = !http10;
    keep = keep && chunked;
    ok = send_all(fd, response_head(res, keep, chunked, std::nullopt), timeout);
    SocketSink sink(fd, chunked, timeout);
    while (ok && res.producer(sink) && !sink.failed()) {
    }
    ok = ok && sink.finish();
  } else {
    // Head and body in two sends: a body may be a large file, not worth copying.
    ok = send_all(fd, response_head(res, keep, false, res.body.size()), timeout) &&
         (head_only || send_all(fd, res.body, timeout));
  }
  if (res.on_stream_end) res.on_stream_end();
  if (hooks.observer) hooks.observer(req, ok ? res.status : 499);
  // A client that closed its side is noticed by the loop (end of stream) after any requests it
  // pipelined before closing are answered.
  return ok && keep;
}

}  // namespace synapse::http
