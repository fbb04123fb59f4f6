// SPDX-License-Identifier: Apache-2.0
// Ollama's routes that need no running model (root, version, tags, ps, show, errors) and CORS,
// on a free loopback port, driven by cpp-httplib's client. Generation and embeddings over a real
// model: tests/e2e/ollama_test.cc.
#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "server/http_server.h"

namespace synapse::server {
namespace {

using Json = nlohmann::json;

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

ServerOptions options(std::vector<std::string> cors = {}) {
  ServerOptions o;
  o.port = 0;
  o.threads = 2;
  o.api_key = "k";
  o.models = &listed_models();
  o.cors_origins = std::move(cors);
  return o;
}

httplib::Headers auth() { return {{"Authorization", "Bearer k"}}; }

TEST(OllamaRoutes, RootVersionTagsPs) {
  HttpServer server(options());
  ASSERT_TRUE(server.start().ok());
  httplib::Client client("127.0.0.1", server.port());
  auto root = client.Get("/");  // open, like /health: clients probe it without the key
  ASSERT_TRUE(root);
  EXPECT_EQ(root->body, "Ollama is running");
  auto version = client.Get("/api/version", auth());
  ASSERT_TRUE(version);
  EXPECT_TRUE(Json::parse(version->body)["version"].is_string());
  auto tags = client.Get("/api/tags", auth());
  ASSERT_TRUE(tags);
  const Json t = Json::parse(tags->body);
  EXPECT_EQ(t["models"][0]["name"], "tiny");
  EXPECT_EQ(t["models"][0]["modified_at"], "2023-11-14T22:13:20.000000000Z");
  auto ps = client.Get("/api/ps", auth());
  ASSERT_TRUE(ps);
  EXPECT_EQ(Json::parse(ps->body)["models"][0]["name"], "tiny");  // given loaded: pinned
}

TEST(OllamaRoutes, ShowAndErrorsInOllamasShape) {
  HttpServer server(options());
  ASSERT_TRUE(server.start().ok());
  httplib::Client client("127.0.0.1", server.port());
  auto show = client.Post("/api/show", auth(), R"({"model": "tiny"})", "application/json");
  ASSERT_TRUE(show);
  EXPECT_EQ(show->status, 200) << show->body;
  EXPECT_EQ(Json::parse(show->body)["details"]["format"], "gguf");
  auto missing = client.Post("/api/show", auth(), R"({"name": "nope"})", "application/json");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(
      Json::parse(missing->body)["error"].get<std::string>().rfind("model 'nope' not found", 0), 0u)
      << missing->body;
  auto bad = client.Post("/api/chat", auth(), R"({"model": 1})", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(Json::parse(bad->body)["error"], "model: must be a string");
}

TEST(OllamaRoutes, CorsIsOffByDefault) {
  HttpServer server(options());
  ASSERT_TRUE(server.start().ok());
  httplib::Client client("127.0.0.1", server.port());
  auto r = client.Get("/api/version", {{"Authorization", "Bearer k"}, {"Origin", "http://a"}});
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->has_header("Access-Control-Allow-Origin"));
  auto pre = client.Options("/api/chat",
                            {{"Origin", "http://a"}, {"Access-Control-Request-Method", "POST"}});
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->status, 401);  // no key, no CORS: an ordinary refused request
}

TEST(OllamaRoutes, CorsAllowsTheGivenOrigins) {
  HttpServer server(options({"http://a"}));
  ASSERT_TRUE(server.start().ok());
  httplib::Client client("127.0.0.1", server.port());
  auto pre = client.Options("/api/chat", {{"Origin", "http://a"},
                                          {"Access-Control-Request-Method", "POST"},
                                          {"Access-Control-Request-Headers", "content-type"}});
  ASSERT_TRUE(pre);
  EXPECT_EQ(pre->status, 204);
  EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Origin"), "http://a");
  EXPECT_EQ(pre->get_header_value("Access-Control-Allow-Headers"), "content-type");
  auto r = client.Get("/api/tags", {{"Authorization", "Bearer k"}, {"Origin", "http://a"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->get_header_value("Access-Control-Allow-Origin"), "http://a");
  auto other = client.Get("/api/tags", {{"Authorization", "Bearer k"}, {"Origin", "http://b"}});
  ASSERT_TRUE(other);
  EXPECT_FALSE(other->has_header("Access-Control-Allow-Origin"));

  HttpServer any(options({"*"}));
  ASSERT_TRUE(any.start().ok());
  httplib::Client any_client("127.0.0.1", any.port());
  auto star = any_client.Get("/v1/models", {{"Authorization", "Bearer k"}, {"Origin", "http://z"}});
  ASSERT_TRUE(star);
  EXPECT_EQ(star->get_header_value("Access-Control-Allow-Origin"), "*");
}

}  // namespace
}  // namespace synapse::server
