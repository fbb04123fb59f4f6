// SPDX-License-Identifier: Apache-2.0
// The server on loopback, driven by raw sockets so that each test controls every byte and its
// timing: pipelining, bodies without a length, the gate before the body, 100-continue, slow and
// idle clients, per-client caps, and a graceful shutdown that writes every stream to its end.
#include "http/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "http/router.h"

namespace synapse::http {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

class Socket {
 public:
  explicit Socket(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~Socket() { ::close(fd_); }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  bool connected() const { return connected_; }
  bool send(std::string_view data) {
    return ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
  }
  // Reads until `until` appears in what was read, the peer closes, or `timeout`.
  std::string read_until(std::string_view until, std::chrono::milliseconds timeout = 5000ms) {
    const auto end = Clock::now() + timeout;
    while (received_.find(until) == std::string::npos && !closed_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      received_.append(buf, static_cast<size_t>(n));
    }
    return received_;
  }
  // True once the server has closed the connection (within `timeout`).
  bool closed_within(std::chrono::milliseconds timeout) {
    read_until("\x01\x02never", timeout);
    return closed_;
  }
  const std::string& received() const { return received_; }

 private:
  int fd_;
  bool connected_ = false;
  bool closed_ = false;
  std::string received_;
};

size_t count_of(std::string_view text, std::string_view what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string_view::npos;
       pos = text.find(what, pos + 1)) {
    ++n;
  }
  return n;
}

// A server with a small route table: /echo answers the body's size, /stream streams
// `stream_chunks` chunks with a pause between them.
struct TestServer {
  explicit TestServer(ServerOptions options = {}, std::string key = "") {
    options.host = "127.0.0.1";
    options.port = 0;
    router.add("GET", "/health",
               [](Request&, Response& res) { res.set_content("ok", "text/plain"); });
    router.add("POST", "/echo", [](Request& req, Response& res) {
      res.set_content("got " + std::to_string(req.body.size()) + " " + req.header("Content-Type"),
                      "text/plain");
    });
    router.add("GET", "/stream", [this](Request&, Response& res) {
      auto sent = std::make_shared<int>(0);
      res.set_stream("text/event-stream", [this, sent](StreamSink& sink) {
        std::this_thread::sleep_for(std::chrono::milliseconds(chunk_pause_ms));
        if (!sink.write("data: " + std::to_string(*sent) + "\n\n")) return false;
        if (++*sent < stream_chunks) return true;
        sink.write("data: [DONE]\n\n");
        return false;
      });
      stream_started = true;
    });
    ServerHooks hooks;
    hooks.handler = [this](Request& req, Response& res) {
      const Router::Match m = router.match(req);
      if (m.kind != Router::Match::Kind::kFound) {
        res.status = 404;
        return;
      }
      m.route->handler(req, res);
    };
    if (!key.empty()) {
      hooks.gate = [key](const Request& head) -> std::optional<Response> {
        if (head.header("Authorization") == "Bearer " + key) return std::nullopt;
        Response res;
        res.status = 401;
        res.set_content("no", "text/plain");
        return res;
      };
    }
    server = std::make_unique<Server>(options, std::move(hooks));
    EXPECT_TRUE(server->start().ok());
  }
  int port() const { return server->port(); }

  Router router;
  int stream_chunks = 10;
  int chunk_pause_ms = 0;
  std::atomic<bool> stream_started{false};
  std::unique_ptr<Server> server;
};

TEST(HttpServer, PipelinedRequestsAreAllAnsweredInOrder) {
  TestServer s;
  Socket c(s.port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(
      c.send("POST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc"
             "GET /health HTTP/1.1\r\n\r\n"
             "POST /echo HTTP/1.1\r\nContent-Length: 1\r\nConnection: close\r\n\r\nz"));
  EXPECT_TRUE(c.closed_within(5000ms));
  const std::string& r = c.received();
  EXPECT_EQ(count_of(r, "HTTP/1.1 200 OK"), 3u) << r;
  const size_t a = r.find("got 3");
  const size_t b = r.find("\r\n\r\nok");
  const size_t z = r.find("got 1");
  ASSERT_NE(z, std::string::npos) << r;
  EXPECT_LT(a, b);
  EXPECT_LT(b, z);
}

TEST(HttpServer, PostWithoutBodyOrLengthIsAnEmptyBody) {
  TestServer s;
  Socket c(s.port());
  ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nHost: x\r\n\r\n"));
  EXPECT_NE(c.read_until("got 0").find("200 OK"), std::string::npos) << c.received();
}

TEST(HttpServer, FormEncodedBodiesAreJustBodies) {
  // curl -d sends application/x-www-form-urlencoded; the body limit applies, not a form limit.
  TestServer s;
  Socket c(s.port());
  const std::string body(100'000, 'x');
  ASSERT_TRUE(
      c.send("POST /echo HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
             "Content-Length: 100000\r\n\r\n" +
             body));
  EXPECT_NE(c.read_until("urlencoded").find("got 100000"), std::string::npos) << c.received();
}

TEST(HttpServer, ChunkedRequestBody) {
  TestServer s;
  Socket c(s.port());
  ASSERT_TRUE(
      c.send("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
             "4\r\nabcd\r\n0\r\n\r\n"));
  EXPECT_NE(c.read_until("got").find("got 4"), std::string::npos) << c.received();
}

TEST(HttpServer, MalformedRequestIs400AndTheConnectionCloses) {
  TestServer s;
  Socket c(s.port());
  ASSERT_TRUE(
      c.send("POST /echo HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"));
  EXPECT_TRUE(c.closed_within(3000ms));
  EXPECT_EQ(c.received().rfind("HTTP/1.1 400 ", 0), 0u) << c.received();
}

TEST(HttpServer, TheGateAnswersBeforeTheBodyIsSent) {
  TestServer s({}, "key");
  Socket c(s.port());
  // A head that announces a megabyte, and no body: the answer must not wait for it.
  const auto start = Clock::now();
  ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n"));
  EXPECT_TRUE(c.closed_within(3000ms));
  EXPECT_LT(Clock::now() - start, 2500ms);
  EXPECT_EQ(c.received().rfind("HTTP/1.1 401 ", 0), 0u) << c.received();

  Socket ok(s.port());
  ASSERT_TRUE(
      ok.send("POST /echo HTTP/1.1\r\nAuthorization: Bearer key\r\nContent-Length: 2\r\n\r\nhi"));
  EXPECT_NE(ok.read_until("got").find("got 2"), std::string::npos) << ok.received();
}

TEST(HttpServer, ExpectContinue) {
  TestServer s;
  Socket c(s.port());
  ASSERT_TRUE(c.send("POST /echo HTTP/1.1\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n"));
  EXPECT_EQ(c.read_until("\r\n\r\n").rfind("HTTP/1.1 100 Continue\r\n\r\n", 0), 0u);
  ASSERT_TRUE(c.send("hi"));
  EXPECT_NE(c.read_until("got").find("got 2"), std::string::npos) << c.received();
}

TEST(HttpServer, SlowClientsHoldNoThreadAndAreClosedInTime) {
  ServerOptions o;
  o.threads = 1;
  o.header_timeout_ms = 600;
  o.body_timeout_ms = 600;
  o.body_min_rate = 1000;
  TestServer s(o);
  // 40 clients trickling a head, 40 trickling a body, on a server with one handler thread.
  std::vector<std::unique_ptr<Socket>> slow;
  for (int i = 0; i < 80; ++i) {
    slow.push_back(std::make_unique<Socket>(s.port()));
    ASSERT_TRUE(slow.back()->send(i < 40 ? "GET /hea"
                                         : "POST /echo HTTP/1.1\r\nContent-Length: 100\r\n\r\nx"));
  }
  const auto start = Clock::now();
  for (int round = 0; round < 3; ++round) {
    Socket quick(s.port());
    const auto asked = Clock::now();
    ASSERT_TRUE(quick.send("GET /health HTTP/1.1\r\nConnection: close\r\n\r\n"));
    EXPECT_NE(quick.read_until("ok", 1000ms).find("200 OK"), std::string::npos);
    EXPECT_LT(Clock::now() - asked, 1000ms);
    for (auto& c : slow) c->send("a");  // one byte each, far below any rate
    std::this_thread::sleep_for(100ms);
  }
  for (auto& c : slow) {
    EXPECT_TRUE(c->closed_within(2000ms));
    EXPECT_EQ(c->received().rfind("HTTP/1.1 408 ", 0), 0u) << c->received();
  }
  EXPECT_LT(Clock::now() - start, 3000ms);
}

TEST(HttpServer, IdleKeepAliveIsClosed) {
  ServerOptions o;
  o.idle_timeout_ms = 300;
  TestServer s(o);
  Socket c(s.port());
  ASSERT_TRUE(c.send("GET /health HTTP/1.1\r\n\r\n"));
  EXPECT_NE(c.read_until("ok").find("keep-alive"), std::string::npos);
  const auto start = Clock::now();
  EXPECT_TRUE(c.closed_within(2000ms));
  EXPECT_GE(Clock::now() - start, 250ms);
}

TEST(HttpServer, ConnectionsPerClientAreCapped) {
  ServerOptions o;
  o.max_connections_per_client = 3;
  TestServer s(o);
  std::vector<std::unique_ptr<Socket>> held;
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<Socket>(s.port()));
  std::this_thread::sleep_for(100ms);  // accepted
  Socket fourth(s.port());
  EXPECT_TRUE(fourth.closed_within(2000ms));
  EXPECT_EQ(fourth.received().rfind("HTTP/1.1 429 ", 0), 0u) << fourth.received();
  held.clear();
  std::this_thread::sleep_for(200ms);  // their closes seen
  Socket again(s.port());
  ASSERT_TRUE(again.send("GET /health HTTP/1.1\r\n\r\n"));
  EXPECT_NE(again.read_until("ok").find("200 OK"), std::string::npos) << again.received();
}

// The shutdown race of issue 25: the producer has more to write when shutdown begins. A graceful
// shutdown writes the whole stream, its end included, before the threads stop.
TEST(HttpServer, ShutdownWaitsForStreamsToBeWritten) {
  TestServer s;
  s.chunk_pause_ms = 50;
  Socket c(s.port());
  ASSERT_TRUE(c.send("GET /stream HTTP/1.1\r\n\r\n"));
  c.read_until("data: 0");
  s.server->begin_shutdown();
  EXPECT_TRUE(s.server->wait_idle(Clock::now() + 5s));
  s.server->stop();
  const std::string& r = c.read_until("0\r\n\r\n");
  EXPECT_NE(r.find("data: 9\n\n"), std::string::npos) << r;
  EXPECT_NE(r.find("data: [DONE]\n\n\r\n0\r\n\r\n"), std::string::npos) << r;
  // New connections are refused once shutdown has begun.
  Socket late(s.port());
  EXPECT_FALSE(late.connected() && late.send("GET /health HTTP/1.1\r\n\r\n") &&
               late.read_until("ok", 500ms).find("200 OK") != std::string::npos);
}

// Without the wait, stop() cuts the stream: what the test above would see on the old order.
TEST(HttpServer, StopCutsStreamsStillBeingWritten) {
  TestServer s;
  s.chunk_pause_ms = 50;
  Socket c(s.port());
  ASSERT_TRUE(c.send("GET /stream HTTP/1.1\r\n\r\n"));
  c.read_until("data: 0");
  s.server->stop();
  EXPECT_TRUE(c.closed_within(3000ms));
  EXPECT_EQ(c.received().find("[DONE]"), std::string::npos) << c.received();
}

TEST(HttpServer, HeadIsAnsweredWithoutABody) {
  TestServer s;
  Socket c(s.port());
  ASSERT_TRUE(c.send("HEAD /health HTTP/1.1\r\nConnection: close\r\n\r\n"));
  EXPECT_TRUE(c.closed_within(3000ms));
  EXPECT_NE(c.received().find("Content-Length: 2\r\n"), std::string::npos) << c.received();
  EXPECT_EQ(c.received().find("\r\n\r\nok"), std::string::npos) << c.received();
}

}  // namespace
}  // namespace synapse::http
