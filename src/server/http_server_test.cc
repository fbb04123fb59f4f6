// SPDX-License-Identifier: Apache-2.0
// The HTTP skeleton on a free loopback port, driven by cpp-httplib's client.
#include "server/http_server.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>

namespace synapse::server {
namespace {

// A model listed by /v1/models; the tests here send it no work (it has no service).
const request::ModelDirectory& listed_models() {
  static const request::ServedModel tiny = [] {
    request::ServedModel m;
    m.id = "tiny";
    m.created = 1700000000;
    return m;
  }();
  static const request::ModelDirectory* directory = [] {
    auto* d = new request::ModelDirectory();  // lives as long as the test program
    d->add(request::unowned(tiny));
    return d;
  }();
  return *directory;
}

ServerOptions options(std::string key = "") {
  ServerOptions o;
  o.port = 0;
  o.api_key = std::move(key);
  o.max_body_bytes = 1024;
  o.threads = 2;
  o.models = &listed_models();
  return o;
}

TEST(HttpServer, HealthAndModels) {
  HttpServer server(options());
  ASSERT_TRUE(server.start().ok());
  httplib::Client client("127.0.0.1", server.port());
  auto health = client.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, R"({"status":"ok"})");
  auto models = client.Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 200);
  EXPECT_EQ(
      models->body,
      R"({"object":"list","data":[{"id":"tiny","object":"model","created":1700000000,"owned_by":"synapse","kind":"generation","loaded":true,"bytes":0,"requests":0,"idle_s":0.0,"expires_at":null}]})");
  auto missing = client.Get("/v1/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_NE(missing->body.find(R"("code":"not_found","retryable":false)"), std::string::npos)
      << missing->body;
  server.stop();
  server.stop();  // idempotent
}

TEST(HttpServer, ApiKeyOnEveryRouteButHealth) {
  HttpServer server(options("s3cret"));
  ASSERT_TRUE(server.start().ok());
  httplib::Client client("127.0.0.1", server.port());
  EXPECT_EQ(client.Get("/health")->status, 200);
  auto none = client.Get("/v1/models");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_NE(none->body.find(R"("code":"invalid_api_key")"), std::string::npos) << none->body;
  EXPECT_EQ(client.Get("/v1/models", {{"Authorization", "Bearer wrong"}})->status, 401);
  EXPECT_EQ(client.Get("/v1/models", {{"Authorization", "Bearer s3cret"}})->status, 200);
  EXPECT_EQ(client.Get("/v1/nothing", {{"Authorization", "Bearer s3cret"}})->status, 404);
}

TEST(HttpServer, BodyOverTheLimitIs413) {
  HttpServer server(options());
  ASSERT_TRUE(server.start().ok());
  httplib::Client client("127.0.0.1", server.port());
  auto big = client.Post("/v1/chat/completions", std::string(4096, 'x'), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
}

// The limit is applied to the head: a declared length over it is refused before any of the body is
// read, so a client cannot make the server receive (or wait for) a body it will refuse. Here the
// body never comes; a server that waited for it would not answer within the read timeout.
TEST(HttpServer, BodyOverTheLimitIs413BeforeTheBodyIsRead) {
  HttpServer server(options());
  ASSERT_TRUE(server.start().ok());
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  timeval timeout{.tv_sec = 5, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(server.port()));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const std::string head =
      "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: 1000000\r\nConnection: close\r\n\r\n";
  ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  std::string answer;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0) answer.append(buf, static_cast<size_t>(n));
  ::close(fd);
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 413")) << "answer: " << answer.substr(0, 200);
}

// The error table's code for a known path asked with the wrong method, not a remapped one.
TEST(HttpServer, WrongMethodIs405MethodNotAllowed) {
  HttpServer server(options());
  ASSERT_TRUE(server.start().ok());
  httplib::Client client("127.0.0.1", server.port());
  auto wrong = client.Delete("/v1/models");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 405);
  EXPECT_EQ(wrong->get_header_value("Allow"), "GET");
  EXPECT_NE(wrong->body.find(R"("code":"method_not_allowed")"), std::string::npos) << wrong->body;
}

// Errors the HTTP layer answers itself keep its status, and a transient one at 429 or 503 says
// when to come back, in the header and the body.
TEST(HttpServer, ProtocolErrorsCarryTheRetryContract) {
  HttpMetrics metrics;
  const http::ServerHooks hooks = make_server_hooks(options(), metrics);
  const http::Response busy = hooks.error(503, "too_many_connections", "busy");
  EXPECT_EQ(busy.status, 503);
  EXPECT_EQ(busy.headers.get("Retry-After"), "1");
  EXPECT_NE(busy.body.find(R"("retryable":true,"retry_after_ms":1000)"), std::string::npos)
      << busy.body;
  const http::Response bad = hooks.error(400, "invalid_http", "bad");
  EXPECT_EQ(bad.status, 400);
  EXPECT_FALSE(bad.headers.has("Retry-After"));
  EXPECT_NE(bad.body.find(R"("retryable":false)"), std::string::npos) << bad.body;
}

TEST(HttpServer, PortInUseIsAnError) {
  HttpServer first(options());
  ASSERT_TRUE(first.start().ok());
  ServerOptions o = options();
  o.port = first.port();
  HttpServer second(o);
  EXPECT_EQ(second.start().code(), ErrorCode::kUnavailable);
}

TEST(HttpServer, ApiKeyFromEnvironment) {
  EXPECT_EQ(resolve_api_key("flag"), "flag");
  ::setenv("SYNAPSE_API_KEY", "from-env", 1);
  EXPECT_EQ(resolve_api_key(""), "from-env");
  ::unsetenv("SYNAPSE_API_KEY");
  EXPECT_EQ(resolve_api_key(""), "");
}

}  // namespace
}  // namespace synapse::server
