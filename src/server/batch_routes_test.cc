// SPDX-License-Identifier: Apache-2.0
// OpenAI's /v1/files + /v1/batches on a free loopback port over a temp-dir job store, no model:
// the test plays the executor through the store's lease protocol.
#include "server/batch_routes.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "jobs/sqlite_job_store.h"
#include "server/http_server.h"
#include "tests/support/test_support.h"

namespace synapse::server {
namespace {

using jobs::ItemOutcome;
using jobs::SqliteJobStore;
using nlohmann::json;

std::string chat_line(const std::string& custom_id, const std::string& url = "/v1/chat/completions",
                      const std::string& text = "hi") {
  return json{{"custom_id", custom_id},
              {"method", "POST"},
              {"url", url},
              {"body", {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", text}}}}}}}
             .dump() +
         "\n";
}

json parse(const httplib::Result& result) {
  EXPECT_TRUE(result);
  if (!result) return json();
  return json::parse(result->body, nullptr, false);
}

class BatchRoutesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    open_store();
    start_server();
  }

  void open_store() {
    jobs::SqliteJobStoreOptions options;
    options.clock = [this] { return now_ms_.load(); };
    Result<std::unique_ptr<SqliteJobStore>> store =
        SqliteJobStore::open(dir_.file("jobs.db"), std::move(options));
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    store_ = std::move(store).value();
    jobs_.store = store_.get();
    jobs_.limits.max_input_bytes = 4096;
    jobs_.on_submitted = [this] { ++submitted_; };
  }

  void start_server() {
    ServerOptions options;
    options.port = 0;
    options.threads = 2;
    options.max_body_bytes = 1 << 20;
    options.jobs = &jobs_;
    server_ = std::make_unique<HttpServer>(options);
    ASSERT_TRUE(server_->start().ok());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }

  void restart() {
    server_.reset();
    store_.reset();
    open_store();
    start_server();
  }

  httplib::Result upload(const std::string& content, const std::string& purpose = "batch") {
    const httplib::MultipartFormDataItems items = {
        {"purpose", purpose, "", ""}, {"file", content, "input.jsonl", "application/jsonl"}};
    return client_->Post("/v1/files", items);
  }

  std::string upload_id(const std::string& content) {
    const json file = parse(upload(content));
    EXPECT_EQ(file.value("object", ""), "file") << file.dump();
    return file.value("id", "");
  }

  httplib::Result create(const json& body, const httplib::Headers& headers = {}) {
    return client_->Post("/v1/batches", headers, body.dump(), "application/json");
  }

  json create_batch(const std::string& file_id, const httplib::Headers& headers = {}) {
    const httplib::Result result = create({{"input_file_id", file_id},
                                           {"endpoint", "/v1/chat/completions"},
                                           {"completion_window", "24h"}},
                                          headers);
    EXPECT_EQ(result ? result->status : 0, 200) << (result ? result->body : "");
    return parse(result);
  }

  json get(const std::string& path) { return parse(client_->Get(path)); }

  // The executor's part: leases the job and commits `outcome(index)` for every item.
  template <typename Outcome>
  void run_job(const std::string& job_id, Outcome outcome, bool complete = true) {
    Result<std::optional<jobs::Lease>> lease = store_->acquire("test", 60'000);
    ASSERT_TRUE(lease.ok() && lease->has_value());
    ASSERT_EQ((*lease)->job_id, job_id);
    Result<jobs::NextItems> next = store_->next_items(**lease, 100);
    ASSERT_TRUE(next.ok());
    std::vector<ItemOutcome> outcomes;
    for (const jobs::WorkItem& item : next->items) outcomes.push_back(outcome(item));
    ASSERT_TRUE(store_->commit_page(**lease, outcomes).ok());
    if (complete) {
      ASSERT_TRUE(store_->complete(**lease).ok());
    }
    lease_ = **lease;
  }

  testing::TempDir dir_;
  std::atomic<int64_t> now_ms_{1'750'000'000'000};  // the store's clock
  std::unique_ptr<SqliteJobStore> store_;
  JobsApi jobs_;
  int submitted_ = 0;
  jobs::Lease lease_;  // the last lease run_job held
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(BatchRoutesTest, UploadRunAndDownloadInOpenAiShape) {
  const std::string input = chat_line("a") + chat_line("b") + chat_line("c");
  const json file = parse(upload(input));
  EXPECT_TRUE(file["id"].get<std::string>().starts_with("file-")) << file.dump();
  EXPECT_EQ(file["bytes"], input.size());
  EXPECT_EQ(file["purpose"], "batch");
  EXPECT_EQ(file["filename"], "input.jsonl");
  EXPECT_EQ(file["status"], "processed");
  EXPECT_EQ(get("/v1/files/" + file["id"].get<std::string>()), file);
  EXPECT_EQ(client_->Get("/v1/files/" + file["id"].get<std::string>() + "/content")->body, input);

  const httplib::Result created = create({{"input_file_id", file["id"]},
                                          {"endpoint", "/v1/chat/completions"},
                                          {"completion_window", "24h"},
                                          {"metadata", {{"project", "nightly"}}}});
  ASSERT_EQ(created->status, 200) << created->body;
  const json batch = parse(created);
  const std::string id = batch["id"];
  EXPECT_EQ(batch["object"], "batch");
  EXPECT_EQ(batch["status"], "in_progress");
  EXPECT_EQ(batch["endpoint"], "/v1/chat/completions");
  EXPECT_EQ(batch["input_file_id"], file["id"]);
  EXPECT_EQ(batch["completion_window"], "24h");
  EXPECT_EQ(batch["expires_at"].get<int64_t>() - batch["created_at"].get<int64_t>(), 24 * 3600);
  EXPECT_TRUE(batch["errors"].is_null());
  EXPECT_TRUE(batch["output_file_id"].is_null());
  EXPECT_EQ(batch["request_counts"], (json{{"total", 3}, {"completed", 0}, {"failed", 0}}));
  EXPECT_EQ(batch["metadata"], (json{{"project", "nightly"}}));
  EXPECT_EQ(submitted_, 1);
  // The batch is the job: the store sees the same id.
  EXPECT_TRUE(store_->get_job(id).ok());
  // No output file before the batch ends.
  EXPECT_EQ(client_->Get("/v1/files/file-" + id + "-output")->status, 404);

  // b fails permanently (a request-level error), a and c answer.
  run_job(
      id,
      [](const jobs::WorkItem& item) {
        if (item.custom_id == "b") {
          return ItemOutcome::failure(item.index, ErrorCode::kContextLengthExceeded,
                                      "prompt too long");
        }
        return ItemOutcome::success(item.index, R"({"answer":")" + item.custom_id + R"("})");
      },
      /*complete=*/false);
  EXPECT_EQ(get("/v1/batches/" + id)["status"], "finalizing");
  ASSERT_TRUE(store_->complete(lease_).ok());

  const json done = get("/v1/batches/" + id);
  EXPECT_EQ(done["status"], "completed");
  EXPECT_FALSE(done["completed_at"].is_null());
  EXPECT_EQ(done["request_counts"], (json{{"total", 3}, {"completed", 2}, {"failed", 1}}));
  ASSERT_EQ(done["output_file_id"], "file-" + id + "-output");
  ASSERT_EQ(done["error_file_id"], "file-" + id + "-errors");

  const std::string output =
      client_->Get("/v1/files/" + done["output_file_id"].get<std::string>() + "/content")->body;
  std::vector<json> lines;
  for (size_t start = 0, end; (end = output.find('\n', start)) != std::string::npos;
       start = end + 1) {
    lines.push_back(json::parse(output.substr(start, end - start)));
  }
  ASSERT_EQ(lines.size(), 2u) << output;
  for (const json& line : lines) {
    const std::string custom_id = line["custom_id"];
    EXPECT_TRUE(line["id"].get<std::string>().starts_with("batch_req_")) << line.dump();
    EXPECT_EQ(line["response"]["status_code"], 200);
    EXPECT_FALSE(line["response"]["request_id"].get<std::string>().empty());
    EXPECT_EQ(line["response"]["body"], (json{{"answer", custom_id}}));
    EXPECT_TRUE(line["error"].is_null());
  }
  EXPECT_EQ(lines[0]["custom_id"], "a");
  EXPECT_EQ(lines[1]["custom_id"], "c");

  const std::string errors =
      client_->Get("/v1/files/" + done["error_file_id"].get<std::string>() + "/content")->body;
  const json error_line = json::parse(errors.substr(0, errors.find('\n')));
  EXPECT_EQ(std::count(errors.begin(), errors.end(), '\n'), 1) << errors;
  EXPECT_EQ(error_line["custom_id"], "b");
  EXPECT_EQ(error_line["response"]["status_code"], 400);
  EXPECT_EQ(error_line["response"]["body"]["error"]["code"], "context_length_exceeded");
  EXPECT_EQ(error_line["response"]["body"]["error"]["message"], "prompt too long");

  const json output_file = get("/v1/files/" + done["output_file_id"].get<std::string>());
  EXPECT_EQ(output_file["purpose"], "batch_output");
  EXPECT_EQ(output_file["bytes"], output.size());
  // Reading twice gives the same bytes (stable request ids).
  EXPECT_EQ(client_->Get("/v1/files/file-" + id + "-output/content")->body, output);
  // Views cannot be deleted on their own.
  const httplib::Result removed = client_->Delete("/v1/files/file-" + id + "-output");
  EXPECT_EQ(removed->status, 400) << removed->body;
}

TEST_F(BatchRoutesTest, BadLinesBecomeBatchErrorsWithLineNumbers) {
  const std::string input = chat_line("ok-1") + "{not json\n" +
                            chat_line("embed", "/v1/embeddings") + "\n" + chat_line("ok-2") +
                            chat_line("ok-1");
  const json batch = create_batch(upload_id(input));
  EXPECT_EQ(batch["request_counts"]["total"], 2);
  ASSERT_TRUE(batch["errors"].is_object()) << batch.dump();
  const json& data = batch["errors"]["data"];
  ASSERT_EQ(data.size(), 3u) << data.dump();
  EXPECT_EQ(data[0]["line"], 2);
  EXPECT_EQ(data[0]["code"], "invalid_json");
  EXPECT_EQ(data[1]["line"], 3);
  EXPECT_EQ(data[1]["code"], "invalid_value");
  EXPECT_NE(data[1]["message"].get<std::string>().find("/v1/embeddings"), std::string::npos);
  EXPECT_EQ(data[2]["line"], 6);
  EXPECT_EQ(data[2]["code"], "duplicate_custom_id");
  // The listing shows the same errors.
  const json listed = get("/v1/batches");
  EXPECT_EQ(listed["data"][0]["errors"], batch["errors"]);

  // Nothing left for the endpoint, or nothing valid at all: the create fails as a whole.
  const httplib::Result wrong_endpoint =
      create({{"input_file_id", upload_id(chat_line("x", "/v1/embeddings"))},
              {"endpoint", "/v1/chat/completions"},
              {"completion_window", "24h"}});
  EXPECT_EQ(wrong_endpoint->status, 400);
  EXPECT_EQ(parse(wrong_endpoint)["error"]["param"], "input_file_id");
  const httplib::Result garbage = create({{"input_file_id", upload_id("garbage\n")},
                                          {"endpoint", "/v1/chat/completions"},
                                          {"completion_window", "24h"}});
  EXPECT_EQ(garbage->status, 400);
  EXPECT_EQ(parse(garbage)["error"]["code"], "invalid_argument");
}

TEST_F(BatchRoutesTest, RequestValidation) {
  const std::string file_id = upload_id(chat_line("a"));
  auto status_of = [this](const json& body) {
    const httplib::Result result = create(body);
    return std::make_pair(result->status, parse(result)["error"]["param"]);
  };
  const json good = {{"input_file_id", file_id},
                     {"endpoint", "/v1/chat/completions"},
                     {"completion_window", "24h"}};
  json body = good;
  body.erase("input_file_id");
  EXPECT_EQ(status_of(body), std::make_pair(400, json("input_file_id")));
  body = good;
  body["endpoint"] = "/v1/responses";
  EXPECT_EQ(status_of(body), std::make_pair(400, json("endpoint")));
  body = good;
  body["completion_window"] = "48h";
  EXPECT_EQ(status_of(body), std::make_pair(400, json("completion_window")));
  body = good;
  body["metadata"] = {{"n", 1}};
  EXPECT_EQ(status_of(body), std::make_pair(400, json("metadata")));
  body = good;
  body["input_file_id"] = "file-unknown";
  EXPECT_EQ(status_of(body), std::make_pair(404, json("input_file_id")));
  const httplib::Result not_json =
      client_->Post("/v1/batches", std::string("{"), "application/json");
  EXPECT_EQ(not_json->status, 400);
  EXPECT_EQ(parse(not_json)["error"]["code"], "invalid_json");

  // Uploads: purpose batch only, within the submission size limit, multipart only.
  const httplib::Result purpose = upload(chat_line("a"), "fine-tune");
  EXPECT_EQ(purpose->status, 400);
  EXPECT_EQ(parse(purpose)["error"]["param"], "purpose");
  const httplib::Result big = upload(std::string(5000, 'x'));
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(parse(big)["error"]["code"], "request_too_large");
  const httplib::Result plain = client_->Post("/v1/files", std::string("x"), "text/plain");
  EXPECT_EQ(plain->status, 400);
  EXPECT_EQ(parse(plain)["error"]["code"], "missing_parameter");
  EXPECT_EQ(client_->Get("/v1/batches?limit=0")->status, 400);
  EXPECT_EQ(client_->Get("/v1/files?order=sideways")->status, 400);
}

TEST_F(BatchRoutesTest, EachCreateIsANewBatchUnlessAnIdempotencyKeyRepeats) {
  const std::string file_id = upload_id(chat_line("a"));
  const std::string first = create_batch(file_id)["id"];
  const std::string second = create_batch(file_id)["id"];
  EXPECT_NE(first, second);
  const std::string keyed = create_batch(file_id, {{"Idempotency-Key", "k1"}})["id"];
  EXPECT_EQ(create_batch(file_id, {{"Idempotency-Key", "k1"}})["id"], keyed);
  EXPECT_EQ(submitted_, 3);  // the repeat woke no executor
  // The same key with other input is a conflict, not a second batch.
  const httplib::Result conflict = create({{"input_file_id", upload_id(chat_line("z"))},
                                           {"endpoint", "/v1/chat/completions"},
                                           {"completion_window", "24h"}},
                                          {{"Idempotency-Key", "k1"}});
  EXPECT_EQ(conflict->status, 422);
  EXPECT_EQ(parse(conflict)["error"]["code"], "idempotency_conflict");
}

TEST_F(BatchRoutesTest, CancelListsUnrunItemsInTheErrorFile) {
  const json batch = create_batch(upload_id(chat_line("a") + chat_line("b")));
  const std::string id = batch["id"];
  const httplib::Result cancelled = client_->Post("/v1/batches/" + id + "/cancel");
  ASSERT_EQ(cancelled->status, 200) << cancelled->body;
  const json object = parse(cancelled);
  EXPECT_EQ(object["status"], "cancelled");
  EXPECT_FALSE(object["cancelled_at"].is_null());
  EXPECT_TRUE(object["output_file_id"].is_null());
  ASSERT_EQ(object["error_file_id"], "file-" + id + "-errors");
  // Cancelling again answers the same batch.
  EXPECT_EQ(parse(client_->Post("/v1/batches/" + id + "/cancel"))["status"], "cancelled");
  const std::string errors = client_->Get("/v1/files/file-" + id + "-errors/content")->body;
  const json first = json::parse(errors.substr(0, errors.find('\n')));
  EXPECT_EQ(std::count(errors.begin(), errors.end(), '\n'), 2) << errors;
  EXPECT_EQ(first["custom_id"], "a");
  EXPECT_TRUE(first["response"].is_null());
  EXPECT_EQ(first["error"]["code"], "batch_cancelled");
}

TEST_F(BatchRoutesTest, ExpiredAndFailedBatchesReportWhatNeverRan) {
  const std::string expiring = create_batch(upload_id(chat_line("a") + chat_line("b")))["id"];
  Result<std::optional<jobs::Lease>> lease = store_->acquire("test", 60'000);
  ASSERT_TRUE(lease.ok() && lease->has_value());
  Result<jobs::NextItems> next = store_->next_items(**lease, 1);
  ASSERT_TRUE(next.ok());
  ASSERT_TRUE(
      store_->commit_page(**lease, {ItemOutcome::success(next->items[0].index, R"({"x":1})")})
          .ok());
  now_ms_ += int64_t{25} * 3600 * 1000;  // past the 24h completion window
  ASSERT_EQ(store_->expire()->expired, 1);
  const json expired = get("/v1/batches/" + expiring);
  EXPECT_EQ(expired["status"], "expired");
  EXPECT_EQ(expired["expired_at"], now_ms_ / 1000);
  EXPECT_EQ(expired["request_counts"], (json{{"total", 2}, {"completed", 1}, {"failed", 0}}));
  const std::string output = client_->Get("/v1/files/file-" + expiring + "-output/content")->body;
  EXPECT_EQ(std::count(output.begin(), output.end(), '\n'), 1) << output;
  const json unrun =
      json::parse(client_->Get("/v1/files/file-" + expiring + "-errors/content")->body);
  EXPECT_EQ(unrun["custom_id"], "b");
  EXPECT_EQ(unrun["error"]["code"], "batch_expired");

  const std::string failing = create_batch(upload_id(chat_line("c")))["id"];
  lease = store_->acquire("test", 60'000);
  ASSERT_TRUE(lease.ok() && lease->has_value());
  ASSERT_EQ((*lease)->job_id, failing);
  ASSERT_TRUE(store_->fail(**lease, ErrorCode::kModelNotFound, "no model tiny").ok());
  const json failed = get("/v1/batches/" + failing);
  EXPECT_EQ(failed["status"], "failed");
  EXPECT_FALSE(failed["failed_at"].is_null());
  ASSERT_TRUE(failed["errors"].is_object()) << failed.dump();
  EXPECT_EQ(failed["errors"]["data"].back()["code"], "model_not_found");
  EXPECT_TRUE(failed["errors"]["data"].back()["line"].is_null());
  EXPECT_TRUE(failed["output_file_id"].is_null());
  const json never = json::parse(
      client_->Get("/v1/files/" + failed["error_file_id"].get<std::string>() + "/content")->body);
  EXPECT_EQ(never["error"]["code"], "model_not_found");
}

TEST_F(BatchRoutesTest, ListsPageNewestFirstAndSkipPlainJobs) {
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(create_batch(upload_id(chat_line("r" + std::to_string(i))))["id"]);
  }
  jobs::Submission plain;
  plain.requests.push_back({.custom_id = "p", .url = "/v1/completions", .body = "{}"});
  Result<jobs::SubmitResult> job = store_->submit(plain, std::nullopt);
  ASSERT_TRUE(job.ok());

  const json page = get("/v1/batches?limit=2");
  ASSERT_EQ(page["data"].size(), 2u) << page.dump();
  EXPECT_EQ(page["data"][0]["id"], ids[2]);
  EXPECT_EQ(page["data"][1]["id"], ids[1]);
  EXPECT_EQ(page["has_more"], true);
  const json rest = get("/v1/batches?limit=2&after=" + page["last_id"].get<std::string>());
  ASSERT_EQ(rest["data"].size(), 1u) << rest.dump();
  EXPECT_EQ(rest["data"][0]["id"], ids[0]);
  EXPECT_EQ(rest["has_more"], false);
  // A job submitted any other way is no batch.
  const httplib::Result not_batch = client_->Get("/v1/batches/" + job->job.id);
  EXPECT_EQ(not_batch->status, 404);
  EXPECT_EQ(parse(not_batch)["error"]["code"], "job_not_found");

  const json files = get("/v1/files?limit=2");
  ASSERT_EQ(files["data"].size(), 2u);
  EXPECT_EQ(files["has_more"], true);
  const json oldest = get("/v1/files?order=asc&limit=1");
  EXPECT_EQ(oldest["data"][0]["id"], get("/v1/batches/" + ids[0])["input_file_id"]);
  const json all = get("/v1/files?purpose=batch");
  EXPECT_EQ(all["data"].size(), 3u);
  EXPECT_EQ(get("/v1/files?purpose=assistants")["data"].size(), 0u);
}

TEST_F(BatchRoutesTest, UnknownIdsAre404WithStableCodes) {
  const httplib::Result batch = client_->Get("/v1/batches/job_000000000000000000000000");
  EXPECT_EQ(batch->status, 404);
  EXPECT_EQ(parse(batch)["error"]["code"], "job_not_found");
  EXPECT_EQ(parse(batch)["error"]["param"], "batch_id");
  EXPECT_EQ(client_->Post("/v1/batches/job_nope/cancel")->status, 404);
  for (const std::string path :
       {"/v1/files/file-nope", "/v1/files/file-nope/content", "/v1/files/file-job_nope-output"}) {
    const httplib::Result file = client_->Get(path);
    EXPECT_EQ(file->status, 404) << path;
    EXPECT_EQ(parse(file)["error"]["code"], "not_found") << path;
    EXPECT_EQ(parse(file)["error"]["param"], "file_id") << path;
  }
  EXPECT_EQ(client_->Delete("/v1/files/file-nope")->status, 404);
}

TEST_F(BatchRoutesTest, FilesAndBatchesSurviveARestartAndDeleteKeepsTheBatch) {
  const std::string input = chat_line("a");
  const std::string file_id = upload_id(input);
  const std::string batch_id = create_batch(file_id)["id"];
  restart();
  EXPECT_EQ(get("/v1/files/" + file_id)["bytes"], input.size());
  EXPECT_EQ(client_->Get("/v1/files/" + file_id + "/content")->body, input);
  EXPECT_EQ(get("/v1/batches/" + batch_id)["input_file_id"], file_id);

  const json deleted = parse(client_->Delete("/v1/files/" + file_id));
  EXPECT_EQ(deleted, (json{{"id", file_id}, {"object", "file"}, {"deleted", true}}));
  EXPECT_EQ(client_->Get("/v1/files/" + file_id)->status, 404);
  EXPECT_EQ(get("/v1/batches/" + batch_id)["status"], "in_progress");
}

}  // namespace
}  // namespace synapse::server
