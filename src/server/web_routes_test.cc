// SPDX-License-Identifier: Apache-2.0
// The web UI as the server ships it: the embedded files are exactly those of web/, every file
// the page references is served, browsers get the page at / while Ollama's clients still get
// their text, gzip and ETag revalidation, the files open without the API key, and the first
// load's compressed size within the issue's 300 kB. In a real browser: tests/e2e/web_test.cc.
#include "server/web_routes.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "server/http_server.h"

namespace synapse::server {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kKey = "web-key";
constexpr size_t kFirstLoadBudgetBytes = 300 * 1000;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string gunzip(const std::string& bytes) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string out;
  char buffer[16384];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof(buffer);
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buffer, sizeof(buffer) - z.avail_out);
  }
  EXPECT_EQ(rc, Z_STREAM_END);
  inflateEnd(&z);
  return out;
}

// The /ui/ files the page and its modules name: <script src>, <link href>, imports.
std::set<std::string> referenced_files() {
  std::set<std::string> names;
  std::vector<std::string> pending = {"index.html"};
  const std::regex ui_ref(R"(/ui/([\w.-]+))");
  const std::regex import_ref(R"(from\s+'\./([\w.-]+)')");
  while (!pending.empty()) {
    const WebAsset* asset = find_web_asset(pending.back());
    pending.pop_back();
    if (asset == nullptr) continue;
    const std::string text(asset->bytes);
    for (const std::regex* re : {&ui_ref, &import_ref}) {
      for (std::sregex_iterator it(text.begin(), text.end(), *re), end; it != end; ++it) {
        if (names.insert((*it)[1]).second) pending.push_back((*it)[1]);
      }
    }
  }
  return names;
}

class WebRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.port = 0;
    o.threads = 2;
    o.api_key = kKey;
    o.models = &models_;
    server_ = std::make_unique<HttpServer>(o);
    ASSERT_TRUE(server_->start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_decompress(false);  // the test reads what went over the wire
  }

  request::ModelDirectory models_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST(WebAssets, EmbeddedFilesAreExactlyTheFilesOfTheWebFolder) {
  std::set<std::string> on_disk;
  for (const fs::directory_entry& e :
       fs::directory_iterator(fs::path(SYNAPSE_SOURCE_DIR) / "web")) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() ||
        (ext != ".html" && ext != ".js" && ext != ".css" && ext != ".svg")) {
      continue;
    }
    on_disk.insert(e.path().filename().string());
    const WebAsset* asset = find_web_asset(e.path().filename().string());
    ASSERT_NE(asset, nullptr) << e.path() << " is not embedded (rebuild)";
    // Not EXPECT_EQ: a mismatch would print both files whole.
    EXPECT_TRUE(asset->bytes == read_file(e.path()))
        << e.path() << " differs from its embedded copy (rebuild)";
  }
  std::set<std::string> embedded;
  for (const WebAsset& a : web_assets()) embedded.insert(std::string(a.name));
  EXPECT_EQ(embedded, on_disk);
  EXPECT_TRUE(on_disk.count("index.html"));
}

TEST_F(WebRoutesTest, EveryFileThePageReferencesIsServedWithItsType) {
  const std::set<std::string> names = referenced_files();
  EXPECT_TRUE(names.count("app.js") && names.count("style.css") && names.count("markdown.js"))
      << names.size();
  for (const std::string& name : names) {
    const auto r = client_->Get("/ui/" + name);
    ASSERT_TRUE(r) << name;
    EXPECT_EQ(r->status, 200) << name;
    const std::string type = r->get_header_value("Content-Type");
    const std::string ext = fs::path(name).extension().string();
    EXPECT_EQ(type.rfind(ext == ".js"    ? "text/javascript"
                         : ext == ".css" ? "text/css"
                         : ext == ".svg" ? "image/svg+xml"
                                         : "?",
                         0),
              0u)
        << name << ": " << type;
  }
  EXPECT_EQ(client_->Get("/ui/nothing.js")->status, 404);
  EXPECT_EQ(client_->Get("/ui/index.html")->status, 404);  // the page lives at /
}

TEST_F(WebRoutesTest, BrowsersGetThePageAtRootAndOllamaClientsTheirText) {
  const auto page = client_->Get("/", {{"Accept", "text/html,application/xhtml+xml,*/*;q=0.8"}});
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);  // open: the page asks for the key itself
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("<script type=\"module\" src=\"/ui/app.js\">"), std::string::npos);
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("connect-src 'self'"),
            std::string::npos);
  for (const char* accept : {"", "*/*", "application/json"}) {
    const auto probe =
        accept[0] != '\0' ? client_->Get("/", {{"Accept", accept}}) : client_->Get("/");
    ASSERT_TRUE(probe) << accept;
    EXPECT_EQ(probe->status, 200);
    EXPECT_EQ(probe->body, "Ollama is running") << accept;
  }
}

TEST_F(WebRoutesTest, GzipWhenAcceptedAndRevalidationByETag) {
  const WebAsset* app = find_web_asset("app.js");
  ASSERT_NE(app, nullptr);
  const auto plain = client_->Get("/ui/app.js");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->body, app->bytes);
  EXPECT_FALSE(plain->has_header("Content-Encoding"));
  EXPECT_EQ(plain->get_header_value("ETag"), app->etag);

  const auto zipped = client_->Get("/ui/app.js", {{"Accept-Encoding", "br, gzip;q=0.8"}});
  ASSERT_TRUE(zipped);
  EXPECT_EQ(zipped->get_header_value("Content-Encoding"), "gzip");
  EXPECT_LT(zipped->body.size(), app->bytes.size());
  EXPECT_EQ(gunzip(zipped->body), app->bytes);
  const std::string zipped_etag = zipped->get_header_value("ETag");
  EXPECT_NE(zipped_etag, plain->get_header_value("ETag"));  // another representation

  const auto refused = client_->Get("/ui/app.js", {{"Accept-Encoding", "gzip;q=0"}});
  EXPECT_FALSE(refused->has_header("Content-Encoding"));

  const auto again = client_->Get(
      "/ui/app.js", {{"Accept-Encoding", "gzip"}, {"If-None-Match", "\"x\", " + zipped_etag}});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 304);
  EXPECT_TRUE(again->body.empty());
  const auto changed = client_->Get("/ui/app.js", {{"If-None-Match", "\"other\""}});
  EXPECT_EQ(changed->status, 200);
}

TEST_F(WebRoutesTest, FirstLoadFitsTheBudgetCompressed) {
  size_t total = 0, raw = 0;
  const auto page = client_->Get("/", {{"Accept", "text/html"}, {"Accept-Encoding", "gzip"}});
  const auto page_raw = client_->Get("/", {{"Accept", "text/html"}});
  ASSERT_TRUE(page && page_raw);
  total += page->body.size();
  raw += page_raw->body.size();
  for (const std::string& name : referenced_files()) {
    const auto r = client_->Get("/ui/" + name, {{"Accept-Encoding", "gzip"}});
    const auto plain = client_->Get("/ui/" + name);
    ASSERT_TRUE(r && plain);
    total += r->body.size();
    raw += plain->body.size();
  }
  EXPECT_LE(total, kFirstLoadBudgetBytes);
  // The files are far under the budget even uncompressed (~56 kB), so the bound alone would pass
  // without any compression: the compressed load must also be well under half the plain one.
  EXPECT_LT(total * 2, raw) << "gzip " << total << " bytes, plain " << raw;
  std::cout << "first load: " << total << " bytes gzip\n";
}

TEST_F(WebRoutesTest, SystemInfoNeedsTheKeyAndNamesTheKernelLevel) {
  EXPECT_EQ(client_->Get("/v1/system")->status, 401);
  const auto r = client_->Get("/v1/system", {{"Authorization", std::string("Bearer ") + kKey}});
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const Json j = Json::parse(r->body);
  EXPECT_FALSE(j["kernels"]["level"].get<std::string>().empty());
  EXPECT_GE(j["kernels"]["checked"].get<int>(), j["kernels"]["passed"].get<int>());
  EXPECT_GE(j["cpu"]["logical_cores"].get<int>(), 1);
  EXPECT_TRUE(j["memory_bandwidth"].is_null());  // measured only when asked for

  const auto measured = client_->Get("/v1/system?measure_bandwidth=1",
                                     {{"Authorization", std::string("Bearer ") + kKey}});
  ASSERT_TRUE(measured);
  const Json m = Json::parse(measured->body)["memory_bandwidth"];
  ASSERT_TRUE(m.is_object()) << measured->body;
  EXPECT_GT(m["best_gb_per_s"].get<double>(), 0.0);
  EXPECT_GE(m["threads"].get<int>(), 1);
  // Kept: a later refresh shows the figure without measuring again.
  const auto later = client_->Get("/v1/system", {{"Authorization", std::string("Bearer ") + kKey}});
  EXPECT_EQ(Json::parse(later->body)["memory_bandwidth"], m);
}

}  // namespace
}  // namespace synapse::server
