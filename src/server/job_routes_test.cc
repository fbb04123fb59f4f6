// SPDX-License-Identifier: Apache-2.0
// The /v1/jobs routes on a free loopback port over a SqliteJobStore in a temporary directory; no
// model: results are written by the test through the store's lease protocol, as the executor
// would write them.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "jobs/sqlite_job_store.h"
#include "server/http_server.h"
#include "tests/support/test_support.h"

namespace synapse::server {
namespace {

using Json = nlohmann::json;
using synapse::testing::TempDir;

constexpr const char* kTwoRequests =
    R"({"requests":[{"custom_id":"a","url":"/v1/embeddings","body":{"input":"x"}},)"
    R"({"custom_id":"b","url":"/v1/embeddings","body":{"input":"y"}}]})";

// A store, the JobsApi over it and a server with the job routes.
struct JobServer {
  explicit JobServer(const std::string& path, jobs::SqliteJobStoreOptions store_options = {},
                     std::string api_key = "") {
    auto opened = jobs::SqliteJobStore::open(path, std::move(store_options));
    EXPECT_TRUE(opened.ok()) << opened.status().to_string();
    if (!opened.ok()) return;
    store = std::move(opened).value();
    api.store = store.get();
    api.on_submitted = [this] { ++submitted; };
    ServerOptions o;
    o.port = 0;
    o.threads = 2;
    o.api_key = std::move(api_key);
    o.jobs = &api;
    server = std::make_unique<HttpServer>(o);
    EXPECT_TRUE(server->start().ok());
  }
  httplib::Client client() const { return httplib::Client("127.0.0.1", server->port()); }

  std::unique_ptr<jobs::SqliteJobStore> store;
  JobsApi api;
  std::atomic<int> submitted{0};
  std::unique_ptr<HttpServer> server;
};

Json body_of(const httplib::Result& r) {
  EXPECT_TRUE(r);
  if (!r) return Json();
  Json j = Json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << r->body;
  return j;
}

std::string error_code_of(const httplib::Result& r) {
  const Json j = body_of(r);
  return j.contains("error") ? j["error"]["code"].get<std::string>() : "(no error) " + r->body;
}

// Sends `text` on a fresh loopback connection and returns everything the server answers until it
// closes (the request should say Connection: close).
std::string raw_exchange(int port, const std::string& text) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::send(fd, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size())) {
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;)
      out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

TEST(JobRoutes, SubmitWithIdempotencyKeyReturnsTheSameJob) {
  TempDir dir;
  JobServer s(dir.file("jobs.db"));
  httplib::Client client = s.client();
  const httplib::Headers key = {{"Idempotency-Key", "nightly-1"}};
  auto first = client.Post("/v1/jobs", key, kTwoRequests, "application/json");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 201) << first->body;
  EXPECT_FALSE(first->has_header("Idempotent-Replayed"));
  const Json job = body_of(first);
  EXPECT_EQ(job["object"], "job");
  EXPECT_EQ(job["status"], "queued");
  EXPECT_EQ(job["class"], "batch");
  EXPECT_EQ(job["counts"]["total"], 2);
  EXPECT_EQ(job["counts"]["pending"], 2);
  EXPECT_EQ(job["idempotency_key"], "nightly-1");
  EXPECT_EQ(job["request_digest"].get<std::string>().size(), 64u);
  EXPECT_GT(job["expires_at"].get<int64_t>(), job["created_at"].get<int64_t>());
  EXPECT_EQ(s.submitted, 1);

  auto again = client.Post("/v1/jobs", key, kTwoRequests, "application/json");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(again->get_header_value("Idempotent-Replayed"), "true");
  EXPECT_EQ(body_of(again)["id"], job["id"]);
  EXPECT_EQ(s.submitted, 1) << "a replay has no new work for the executor";

  // The same body without a key finds the job by its digest.
  auto no_key = client.Post("/v1/jobs", kTwoRequests, "application/json");
  ASSERT_TRUE(no_key);
  EXPECT_EQ(no_key->status, 200);
  EXPECT_EQ(body_of(no_key)["id"], job["id"]);

  // The same key with other work is a conflict, never a second job.
  const std::string other =
      R"({"requests":[{"custom_id":"z","url":"/v1/embeddings","body":{"input":"q"}}]})";
  auto conflict = client.Post("/v1/jobs", key, other, "application/json");
  ASSERT_TRUE(conflict);
  EXPECT_EQ(conflict->status, 422);
  EXPECT_EQ(error_code_of(conflict), "idempotency_conflict");
  EXPECT_EQ(s.store->list_jobs({})->size(), 1u);
}

TEST(JobRoutes, JsonlWithABadLineCreatesTheJobAndReportsTheLine) {
  TempDir dir;
  JobServer s(dir.file("jobs.db"));
  httplib::Client client = s.client();
  const std::string jsonl =
      R"({"custom_id":"a","method":"POST","url":"/v1/embeddings","body":{"input":"x"}})"
      "\n{not json\n"
      R"({"custom_id":"c","method":"POST","url":"/v1/nowhere","body":{}})"
      "\n";
  auto r = client.Post("/v1/jobs?class=background", jsonl, "application/jsonl");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 201) << r->body;
  const Json job = body_of(r);
  EXPECT_EQ(job["class"], "background");
  EXPECT_EQ(job["counts"]["total"], 1);
  EXPECT_EQ(job["counts"]["invalid_lines"], 2);
  ASSERT_EQ(job["line_errors"].size(), 2u);
  EXPECT_EQ(job["line_errors"][0]["line"], 2);
  EXPECT_EQ(job["line_errors"][0]["code"], "invalid_json");
  EXPECT_EQ(job["line_errors"][1]["line"], 3);
  EXPECT_EQ(job["line_errors"][1]["code"], "invalid_value");
  // The line errors stay with the job.
  EXPECT_EQ(body_of(client.Get("/v1/jobs/" + job["id"].get<std::string>()))["line_errors"],
            job["line_errors"]);

  // The class from the header, media type parameters ignored.
  auto header = client.Post(
      "/v1/jobs", {{"X-Synapse-Class", "background"}},
      R"({"custom_id":"h","method":"POST","url":"/v1/embeddings","body":{"input":"h"}})",
      "application/x-ndjson; charset=utf-8");
  ASSERT_TRUE(header);
  EXPECT_EQ(header->status, 201) << header->body;
  EXPECT_EQ(body_of(header)["class"], "background");
}

TEST(JobRoutes, BadSubmissionsAreClearErrors) {
  TempDir dir;
  JobServer s(dir.file("jobs.db"));
  httplib::Client client = s.client();
  const auto post = [&](const std::string& path, const std::string& body, const char* type) {
    auto r = client.Post(path, body, type);
    EXPECT_TRUE(r);
    return r;
  };
  auto not_json = post("/v1/jobs", "{", "application/json");
  EXPECT_EQ(not_json->status, 400);
  EXPECT_EQ(error_code_of(not_json), "invalid_json");
  auto nothing_valid = post("/v1/jobs", "{oops\n", "application/jsonl");
  EXPECT_EQ(nothing_valid->status, 400);
  EXPECT_EQ(error_code_of(nothing_valid), "invalid_argument");
  EXPECT_NE(nothing_valid->body.find("line 1"), std::string::npos) << nothing_valid->body;
  auto bad_class = post("/v1/jobs?class=urgent", "{}\n", "application/jsonl");
  EXPECT_EQ(bad_class->status, 400);
  EXPECT_EQ(body_of(bad_class)["error"]["param"], "class");
  auto class_twice = post("/v1/jobs?class=batch", kTwoRequests, "application/json");
  EXPECT_EQ(class_twice->status, 400);
  EXPECT_EQ(error_code_of(class_twice), "invalid_value");
  auto long_key = client.Post("/v1/jobs", {{"Idempotency-Key", std::string(256, 'k')}},
                              kTwoRequests, "application/json");
  ASSERT_TRUE(long_key);
  EXPECT_EQ(long_key->status, 400);
  EXPECT_EQ(error_code_of(long_key), "invalid_value");
  EXPECT_EQ(body_of(long_key)["error"]["param"], "Idempotency-Key");
  EXPECT_EQ(s.submitted, 0);
  EXPECT_TRUE(s.store->list_jobs({})->empty());
}

TEST(JobRoutes, UnknownJobIs404JobNotFound) {
  TempDir dir;
  JobServer s(dir.file("jobs.db"));
  httplib::Client client = s.client();
  const auto check = [](const httplib::Result& r) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404);
    const Json body = body_of(r);
    EXPECT_EQ(body["error"]["code"], "job_not_found");
    EXPECT_EQ(body["error"]["type"], "not_found_error");
  };
  const std::string unknown = "/v1/jobs/job_000000000000000000000000";
  check(client.Get(unknown));
  check(client.Get(unknown + "/results"));
  check(client.Post(unknown + "/cancel", "", "text/plain"));
}

TEST(JobRoutes, ResultPagesAreReadableWhileTheJobRuns) {
  TempDir dir;
  // Pages of one item each, so that three outcomes make three pages.
  JobServer s(dir.file("jobs.db"), {.max_page_bytes = 1});
  httplib::Client client = s.client();
  const std::string three =
      R"({"requests":[{"custom_id":"a","url":"/v1/embeddings","body":{"input":"x"}},)"
      R"({"custom_id":"b","url":"/v1/embeddings","body":{"input":"y"}},)"
      R"({"custom_id":"c","url":"/v1/embeddings","body":{"input":"z"}}]})";
  const std::string id =
      body_of(client.Post("/v1/jobs", three, "application/json"))["id"].get<std::string>();
  auto none_yet = client.Get("/v1/jobs/" + id + "/results");
  ASSERT_TRUE(none_yet);
  EXPECT_EQ(none_yet->status, 404);
  EXPECT_EQ(error_code_of(none_yet), "not_found");
  EXPECT_EQ(body_of(none_yet)["error"]["param"], "page");

  auto lease = s.store->acquire("test-executor", 60'000);
  ASSERT_TRUE(lease.ok() && lease->has_value());
  auto items = s.store->next_items(**lease, 2);
  ASSERT_TRUE(items.ok());
  ASSERT_EQ(items->items.size(), 2u);
  ASSERT_TRUE(s.store
                  ->commit_page(**lease, {jobs::ItemOutcome::success(0, R"({"v":[1]})"),
                                          jobs::ItemOutcome::failure(1, ErrorCode::kInvalidValue,
                                                                     "bad input")})
                  .ok());

  const Json running = body_of(client.Get("/v1/jobs/" + id));
  EXPECT_EQ(running["status"], "running");
  EXPECT_EQ(running["pages"], 2);
  EXPECT_EQ(running["counts"]["succeeded"], 1);
  EXPECT_EQ(running["counts"]["failed"], 1);
  EXPECT_EQ(running["counts"]["pending"], 1);
  EXPECT_EQ(running["attempts"], 1);

  const Json page0 = body_of(client.Get("/v1/jobs/" + id + "/results"));
  EXPECT_EQ(page0["object"], "list");
  EXPECT_EQ(page0["job_id"], id);
  EXPECT_EQ(page0["page"], 0);
  EXPECT_EQ(page0["next_page"], 1);
  EXPECT_EQ(page0["first_item"], 0);
  ASSERT_EQ(page0["data"].size(), 1u);
  EXPECT_EQ(page0["data"][0]["custom_id"], "a");
  EXPECT_EQ(page0["data"][0]["response"], Json::parse(R"({"v":[1]})"));
  const Json page1 = body_of(client.Get("/v1/jobs/" + id + "/results?page=1"));
  EXPECT_EQ(page1["data"][0]["custom_id"], "b");
  EXPECT_EQ(page1["data"][0]["error"]["code"], "invalid_value");
  EXPECT_TRUE(page1["next_page"].is_null()) << "no later page is committed yet";
  EXPECT_EQ(client.Get("/v1/jobs/" + id + "/results?page=2")->status, 404);
  for (const char* bad : {"-1", "x", "1.5", ""}) {
    auto r = client.Get("/v1/jobs/" + id + "/results?page=" + bad);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << bad;
    EXPECT_EQ(error_code_of(r), "invalid_value") << bad;
  }

  items = s.store->next_items(**lease, 2);
  ASSERT_TRUE(items.ok());
  ASSERT_TRUE(s.store->commit_page(**lease, {jobs::ItemOutcome::success(2, "{}")}).ok());
  ASSERT_TRUE(s.store->complete(**lease).ok());
  EXPECT_EQ(body_of(client.Get("/v1/jobs/" + id + "/results?page=1"))["next_page"], 2);
  const Json done = body_of(client.Get("/v1/jobs/" + id));
  EXPECT_EQ(done["status"], "completed");
  EXPECT_TRUE(done.contains("finished_at"));
}

TEST(JobRoutes, CancelAndList) {
  TempDir dir;
  JobServer s(dir.file("jobs.db"));
  httplib::Client client = s.client();
  std::vector<std::string> ids;  // oldest first
  for (int i = 0; i < 4; ++i) {
    const std::string one = R"({"custom_id":"r","method":"POST","url":"/v1/embeddings",)"
                            R"("body":{"input":")" +
                            std::to_string(i) + "\"}}";
    const char* job_class = i % 2 == 0 ? "batch" : "background";
    auto r = client.Post(std::string("/v1/jobs?class=") + job_class, one, "application/jsonl");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 201) << r->body;
    ids.push_back(body_of(r)["id"].get<std::string>());
  }
  auto cancelled = client.Post("/v1/jobs/" + ids[1] + "/cancel", "", "text/plain");
  ASSERT_TRUE(cancelled);
  EXPECT_EQ(cancelled->status, 200) << cancelled->body;
  EXPECT_EQ(body_of(cancelled)["status"], "cancelled");
  EXPECT_TRUE(body_of(cancelled).contains("finished_at"));
  // Cancelling a terminal job returns it unchanged.
  EXPECT_EQ(body_of(client.Post("/v1/jobs/" + ids[1] + "/cancel", "", "text/plain"))["status"],
            "cancelled");
  EXPECT_EQ(body_of(client.Get("/v1/jobs/" + ids[1]))["status"], "cancelled");
  const auto listed_ids = [](const Json& list) {
    std::vector<std::string> out;
    for (const Json& job : list["data"]) out.push_back(job["id"].get<std::string>());
    return out;
  };
  const Json all = body_of(client.Get("/v1/jobs"));
  EXPECT_EQ(all["object"], "list");
  EXPECT_EQ(listed_ids(all), (std::vector<std::string>{ids[3], ids[2], ids[1], ids[0]}));
  EXPECT_EQ(all["has_more"], false);
  EXPECT_EQ(all["last_id"], ids[0]);
  EXPECT_EQ(listed_ids(body_of(client.Get("/v1/jobs?class=background"))),
            (std::vector<std::string>{ids[3], ids[1]}));
  EXPECT_EQ(listed_ids(body_of(client.Get("/v1/jobs?status=cancelled"))),
            (std::vector<std::string>{ids[1]}));
  EXPECT_EQ(listed_ids(body_of(client.Get("/v1/jobs?status=queued&class=background"))),
            (std::vector<std::string>{ids[3]}));
  // Paging with limit and the after cursor.
  const Json first = body_of(client.Get("/v1/jobs?limit=3"));
  EXPECT_EQ(listed_ids(first), (std::vector<std::string>{ids[3], ids[2], ids[1]}));
  EXPECT_EQ(first["has_more"], true);
  EXPECT_EQ(first["last_id"], ids[1]);
  const Json second = body_of(client.Get("/v1/jobs?limit=3&after=" + ids[1]));
  EXPECT_EQ(listed_ids(second), (std::vector<std::string>{ids[0]}));
  EXPECT_EQ(second["has_more"], false);

  for (const char* bad :
       {"status=done", "class=urgent", "limit=0", "limit=1001", "limit=ten", "after=job_unknown"}) {
    auto r = client.Get(std::string("/v1/jobs?") + bad);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << bad;
    EXPECT_EQ(error_code_of(r), "invalid_value") << bad;
    EXPECT_FALSE(body_of(r)["error"]["param"].is_null()) << bad;
  }
}

// What `curl -X POST .../cancel` sends: no body and no Content-Length (issue 22, finding 4;
// cpp-httplib answered 400 with an empty body).
TEST(JobRoutes, CancelWithoutABodyOrLength) {
  TempDir dir;
  JobServer s(dir.file("jobs.db"));
  httplib::Client client = s.client();
  auto r = client.Post(
      "/v1/jobs?class=batch",
      R"({"custom_id":"r","method":"POST","url":"/v1/embeddings","body":{"input":"x"}})",
      "application/jsonl");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 201) << r->body;
  const std::string id = body_of(r)["id"].get<std::string>();
  const std::string raw = raw_exchange(
      s.server->port(),
      "POST /v1/jobs/" + id + "/cancel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(raw.rfind("HTTP/1.1 200 ", 0), 0u) << raw;
  EXPECT_NE(raw.find(R"("status":"cancelled")"), std::string::npos) << raw;
  EXPECT_EQ(body_of(client.Get("/v1/jobs/" + id))["status"], "cancelled");
}

TEST(JobRoutes, ApiKeyApplies) {
  TempDir dir;
  JobServer s(dir.file("jobs.db"), {}, "s3cret");
  httplib::Client client = s.client();
  EXPECT_EQ(client.Get("/v1/jobs")->status, 401);
  EXPECT_EQ(client.Post("/v1/jobs", kTwoRequests, "application/json")->status, 401);
  EXPECT_EQ(client.Get("/v1/jobs", {{"Authorization", "Bearer s3cret"}})->status, 200);
  EXPECT_TRUE(s.store->list_jobs({})->empty());
}

TEST(JobRoutes, NoJobRoutesWithoutAStore) {
  ServerOptions o;
  o.port = 0;
  o.threads = 1;
  HttpServer server(o);
  ASSERT_TRUE(server.start().ok());
  httplib::Client client("127.0.0.1", server.port());
  EXPECT_EQ(client.Get("/v1/jobs")->status, 404);
}

// A full disk (emulated by a page quota) is 507 storage_full; what was stored stays readable.
TEST(JobRoutes, FullDatabaseIs507StorageFull) {
  TempDir dir;
  JobServer s(dir.file("jobs.db"), {.max_database_pages = 64});
  httplib::Client client = s.client();
  const auto submission = [](int n) {
    std::string body = R"({"requests":[)";
    for (int i = 0; i < 50; ++i) {
      body += std::string(i == 0 ? "" : ",") + R"({"custom_id":"r)" + std::to_string(i) +
              R"(","url":"/v1/embeddings","body":{"input":")" + std::to_string(n) +
              std::string(200, 'x') + "\"}}";
    }
    return body + "]}";
  };
  auto first = client.Post("/v1/jobs", submission(0), "application/json");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 201) << first->body;
  const std::string id = body_of(first)["id"].get<std::string>();
  int status = 201;
  std::string code;
  for (int n = 1; n < 200 && status == 201; ++n) {
    auto r = client.Post("/v1/jobs", submission(n), "application/json");
    ASSERT_TRUE(r);
    status = r->status;
    if (status != 201) code = error_code_of(r);
  }
  EXPECT_EQ(status, 507);
  EXPECT_EQ(code, "storage_full");
  EXPECT_EQ(body_of(client.Get("/v1/jobs/" + id))["id"], id);
}

// Against a database file the server can only read: reads answer, a submit is 503
// storage_read_only (transient: an operator can fix the file), not a crash.
void check_read_only_routes(const std::string& path, const std::string& id) {
  JobServer s(path);
  ASSERT_NE(s.store, nullptr);
  EXPECT_TRUE(s.store->read_only());
  httplib::Client client = s.client();
  EXPECT_EQ(body_of(client.Get("/v1/jobs/" + id))["id"], id);
  EXPECT_EQ(body_of(client.Get("/v1/jobs"))["data"].size(), 1u);
  const std::string other =
      R"({"requests":[{"custom_id":"n","url":"/v1/embeddings","body":{"input":"n"}}]})";
  auto submit = client.Post("/v1/jobs", other, "application/json");
  ASSERT_TRUE(submit);
  EXPECT_EQ(submit->status, 503);
  EXPECT_EQ(error_code_of(submit), "storage_read_only");
  auto cancel = client.Post("/v1/jobs/" + id + "/cancel", "", "text/plain");
  ASSERT_TRUE(cancel);
  EXPECT_EQ(cancel->status, 503);
  EXPECT_EQ(error_code_of(cancel), "storage_read_only");
  EXPECT_EQ(s.submitted, 0);
}

TEST(JobRoutes, ReadOnlyDatabaseIs503StorageReadOnly) {
  TempDir dir;
  const std::string path = dir.file("jobs.db");
  std::string id;
  {
    auto store = jobs::SqliteJobStore::open(path);
    ASSERT_TRUE(store.ok());
    auto submission = jobs::parse_json_submission(kTwoRequests);
    ASSERT_TRUE(submission.ok());
    id = (*store)->submit(*submission, std::nullopt)->job.id;
  }
  ASSERT_EQ(chmod(path.c_str(), 0444), 0);
  synapse::testing::run_unprivileged(dir.path(), [&] { check_read_only_routes(path, id); });
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
}

}  // namespace
}  // namespace synapse::server
