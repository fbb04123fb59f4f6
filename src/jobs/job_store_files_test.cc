// SPDX-License-Identifier: Apache-2.0
// The stores' files and OpenAI batch attributes, on both backends (SQLite, PostgreSQL); the
// in-place upgrade of a version-1 SQLite database; restrict_to_endpoint.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "jobs/job_store_testing.h"
#include "jobs/sqlite_job_store.h"
#include "jobs/submission.h"
#include "tests/support/test_support.h"

namespace synapse::jobs {
namespace {

using synapse::testing::TempDir;

Submission one_request(std::string_view custom_id) {
  Submission submission;
  submission.requests.push_back(
      JobRequest{.custom_id = std::string(custom_id), .url = "/v1/embeddings", .body = "{}"});
  return submission;
}

std::unique_ptr<SqliteJobStore> open_store(const std::string& path,
                                           SqliteJobStoreOptions options = {}) {
  Result<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::open(path, std::move(options));
  EXPECT_TRUE(store.ok()) << store.status().to_string();
  return store.ok() ? std::move(store).value() : nullptr;
}

class JobStoreFiles : public ::testing::TestWithParam<StoreBackend> {
 protected:
  void SetUp() override {
    SYN_TEST_STORE(location, GetParam());
    location_ = std::move(location);
  }
  std::unique_ptr<JobStore> open(TestStoreOptions options = {}) {
    Result<std::unique_ptr<JobStore>> store = location_->open(std::move(options));
    EXPECT_TRUE(store.ok()) << store.status().to_string();
    return store.ok() ? std::move(store).value() : nullptr;
  }
  std::unique_ptr<TestStore> location_;
};

INSTANTIATE_TEST_SUITE_P(Backends, JobStoreFiles,
                         ::testing::Values(StoreBackend::kSqlite, StoreBackend::kPostgres),
                         store_backend_name);

int64_t schema_version(const std::string& path) {
  Result<SqliteDb> db = SqliteDb::open(path, 1000);
  if (!db.ok()) return -1;
  Result<SqliteStatement> select = db->prepare("SELECT MAX(version) FROM schema_version");
  if (!select.ok()) return -1;
  Result<bool> row = select->step();
  if (!row.ok() || !*row) return -1;
  return select->column_int(0);
}

TEST_P(JobStoreFiles, CreateGetListDelete) {
  std::unique_ptr<JobStore> store = open();
  ASSERT_TRUE(store);
  const std::string content("line one\n\0binary\n", 18);
  Result<StoredFile> first = store->create_file("in.jsonl", "batch", content);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_TRUE(first->id.starts_with("file-"));
  EXPECT_EQ(first->bytes, 18);
  Result<StoredFile> second = store->create_file("other.jsonl", "evals", "x");
  ASSERT_TRUE(second.ok());

  EXPECT_EQ(store->get_file(first->id)->filename, "in.jsonl");
  EXPECT_EQ(*store->file_content(first->id), content);  // bytes kept exactly, NUL included
  Result<std::vector<StoredFile>> newest = store->list_files({.limit = 1});
  ASSERT_TRUE(newest.ok());
  ASSERT_EQ(newest->size(), 1u);
  EXPECT_EQ((*newest)[0].id, second->id);
  Result<std::vector<StoredFile>> after = store->list_files({.after = second->id});
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0].id, first->id);
  EXPECT_EQ(store->list_files({.purpose = "batch"})->size(), 1u);
  EXPECT_EQ(store->list_files({.after = first->id, .oldest_first = true})->size(), 1u);

  EXPECT_TRUE(store->delete_file(first->id).ok());
  EXPECT_EQ(store->get_file(first->id).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(store->file_content(first->id).status().code(), ErrorCode::kNotFound);
  EXPECT_EQ(store->delete_file(first->id).code(), ErrorCode::kNotFound);
  EXPECT_EQ(store->get_file("file-nope").status().where().field, "file_id");
}

TEST_P(JobStoreFiles, LimitsAreClearErrors) {
  std::unique_ptr<JobStore> store = open({.max_file_bytes = 10});
  ASSERT_TRUE(store);
  EXPECT_EQ(store->create_file("f", "batch", std::string(11, 'x')).status().code(),
            ErrorCode::kRequestTooLarge);
  EXPECT_TRUE(store->create_file("f", "batch", std::string(10, 'x')).ok());
  EXPECT_EQ(store->create_file("f", "", "x").status().code(), ErrorCode::kMissingParameter);
  EXPECT_EQ(store->create_file(std::string(256, 'n'), "batch", "x").status().code(),
            ErrorCode::kInvalidValue);
}

TEST_P(JobStoreFiles, BatchAttributesTravelWithTheJob) {
  std::unique_ptr<JobStore> store = open();
  ASSERT_TRUE(store);
  Submission batch = one_request("a");
  batch.openai_batch = OpenAiBatch{.input_file_id = "file-1",
                                   .endpoint = "/v1/embeddings",
                                   .completion_window = "24h",
                                   .metadata_json = R"({"k":"v"})"};
  batch.line_errors.push_back({.line = 2, .code = ErrorCode::kInvalidJson, .message = "bad"});
  Result<SubmitResult> submitted = store->submit(batch, "batch:1");
  ASSERT_TRUE(submitted.ok()) << submitted.status().to_string();
  ASSERT_TRUE(submitted->job.openai_batch);
  EXPECT_EQ(submitted->job.openai_batch->metadata_json, R"({"k":"v"})");
  ASSERT_TRUE(store->submit(one_request("plain"), std::nullopt).ok());

  Result<std::vector<JobInfo>> batches = store->list_jobs({.openai_batches_only = true});
  ASSERT_TRUE(batches.ok());
  ASSERT_EQ(batches->size(), 1u);
  EXPECT_EQ((*batches)[0].openai_batch->input_file_id, "file-1");
  ASSERT_EQ((*batches)[0].line_errors.size(), 1u);  // a batch listing carries its line errors
  EXPECT_EQ(store->list_jobs({})->size(), 2u);
  EXPECT_FALSE(store->list_jobs({})->front().openai_batch);  // the plain job, newest
}

TEST(SqliteJobStoreFiles, VersionOneDatabaseUpgradesInPlace) {
  TempDir dir;
  const std::string path = dir.file("jobs.db");
  std::string job_id;
  {
    std::unique_ptr<SqliteJobStore> store = open_store(path);
    ASSERT_TRUE(store);
    Result<SubmitResult> submitted = store->submit(one_request("old"), std::nullopt);
    ASSERT_TRUE(submitted.ok());
    job_id = submitted->job.id;
  }
  {
    // Back to exactly version 1: version 2 only added these two tables.
    Result<SqliteDb> db = SqliteDb::open(path, 1000);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->exec("DROP TABLE openai_batches; DROP TABLE files; "
                         "DELETE FROM schema_version WHERE version = 2")
                    .ok());
  }
  ASSERT_EQ(schema_version(path), 1);
  std::unique_ptr<SqliteJobStore> store = open_store(path);
  ASSERT_TRUE(store);
  EXPECT_EQ(schema_version(path), SqliteJobStore::kSchemaVersion);
  Result<JobInfo> job = store->get_job(job_id);
  ASSERT_TRUE(job.ok()) << job.status().to_string();
  EXPECT_EQ(job->counts.total, 1);
  EXPECT_FALSE(job->openai_batch);
  EXPECT_TRUE(store->create_file("f", "batch", "x").ok());
  // Opening again is a no-op.
  store.reset();
  EXPECT_TRUE(open_store(path));
  EXPECT_EQ(schema_version(path), SqliteJobStore::kSchemaVersion);
}

TEST(RestrictToEndpoint, OtherUrlsBecomeLineErrorsInLineOrder) {
  const std::string text = R"({"custom_id":"a","method":"POST","url":"/v1/embeddings","body":{}})"
                           "\n"
                           R"({"custom_id":"b","method":"POST","url":"/v1/completions","body":{}})"
                           "\n"
                           "not json\n"
                           R"({"custom_id":"c","method":"POST","url":"/v1/embeddings","body":{}})"
                           "\n";
  Result<Submission> submission = parse_jsonl_submission(text, JobClass::kBatch);
  ASSERT_TRUE(submission.ok());
  EXPECT_EQ(submission->requests[2].line, 4);
  ASSERT_TRUE(restrict_to_endpoint(*submission, "/v1/embeddings").ok());
  ASSERT_EQ(submission->requests.size(), 2u);
  EXPECT_EQ(submission->requests[1].custom_id, "c");
  ASSERT_EQ(submission->line_errors.size(), 2u);
  EXPECT_EQ(submission->line_errors[0].line, 2);
  EXPECT_EQ(submission->line_errors[0].code, ErrorCode::kInvalidValue);
  EXPECT_EQ(submission->line_errors[1].line, 3);
  EXPECT_EQ(submission->line_errors[1].code, ErrorCode::kInvalidJson);
  Submission none = *submission;
  EXPECT_EQ(restrict_to_endpoint(none, "/v1/completions").code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace synapse::jobs
