// SPDX-License-Identifier: Apache-2.0
// Storage failures: a full disk (emulated by a page quota) and a read-only database file surface
// as transient errors, never a crash or a corrupt database, and committed data stays readable.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "jobs/sqlite_job_store.h"
#include "tests/support/test_support.h"

namespace synapse::jobs {
namespace {

using synapse::testing::TempDir;

Submission make_submission(int items, const std::string& tag, size_t body_bytes = 16) {
  Submission submission;
  for (int i = 0; i < items; ++i) {
    submission.requests.push_back(JobRequest{
        .custom_id = tag + "-" + std::to_string(i),
        .url = "/v1/embeddings",
        .body = R"({"input":")" + tag + std::to_string(i) + std::string(body_bytes, 'x') + "\"}"});
  }
  return submission;
}

bool integrity_ok(const std::string& path) {
  Result<SqliteDb> db = SqliteDb::open(path, 1000);
  if (!db.ok()) return false;
  Result<SqliteStatement> check = db->prepare("PRAGMA integrity_check");
  if (!check.ok() || !*check->step()) return false;
  return check->column_text(0) == "ok";
}

TEST(JobStorage, FullDiskIsATransientErrorAndKeepsCommittedData) {
  TempDir dir;
  const std::string path = dir.file("jobs.db");
  std::string first_id;
  std::string committed_page;
  {
    // 64 pages of 4 KiB: room for the schema and a few small jobs.
    Result<std::unique_ptr<SqliteJobStore>> store =
        SqliteJobStore::open(path, {.max_database_pages = 64});
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    Result<SubmitResult> first = (*store)->submit(make_submission(4, "first"), std::nullopt);
    ASSERT_TRUE(first.ok()) << first.status().to_string();
    first_id = first->job.id;
    Result<std::optional<Lease>> lease = (*store)->acquire("exec", 60'000);
    ASSERT_TRUE(lease.ok() && lease->has_value());
    ASSERT_TRUE((*store)->commit_page(**lease, {ItemOutcome::success(0, R"({"v":[1,2]})")}).ok());
    committed_page = (*store)->result_page(first_id, 0)->jsonl;

    // Fill the quota with submissions until the database refuses.
    Status full;
    for (int i = 0; i < 1000 && full.ok(); ++i) {
      full = (*store)
                 ->submit(make_submission(50, "fill" + std::to_string(i), 200), std::nullopt)
                 .status();
    }
    ASSERT_EQ(full.code(), ErrorCode::kStorageFull) << full.to_string();
    EXPECT_TRUE(full.is_transient());
    EXPECT_EQ(error_code_info(full.code()).http_status, 507);

    // A page commit into the full database fails the same way and leaves no partial page.
    const std::string big(200'000, 'y');
    Status commit =
        (*store)
            ->commit_page(**lease, {ItemOutcome::success(1, R"({"v":")" + big + R"("})")})
            .status();
    EXPECT_EQ(commit.code(), ErrorCode::kStorageFull) << commit.to_string();
    EXPECT_EQ((*store)->result_page(first_id, 1).status().code(), ErrorCode::kNotFound);

    // Reads still work on the same connection.
    Result<JobInfo> job = (*store)->get_job(first_id);
    ASSERT_TRUE(job.ok()) << job.status().to_string();
    EXPECT_EQ(job->counts.succeeded, 1);
    EXPECT_EQ((*store)->result_page(first_id, 0)->jsonl, committed_page);
    // Small writes that fit (a lease renewal updates a row in place) still succeed.
    EXPECT_TRUE((*store)->renew(**lease, 60'000).ok());
  }
  EXPECT_TRUE(integrity_ok(path));
  // With space again (no quota), the same database takes writes.
  Result<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::open(path);
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->result_page(first_id, 0)->jsonl, committed_page);
  EXPECT_TRUE((*store)->submit(make_submission(50, "after", 200), std::nullopt).ok());
}

// Opens the read-only file and checks reads work and writes fail with storage_read_only.
void check_read_only_store(const std::string& path, const std::string& id,
                           const std::string& committed_page) {
  Result<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::open(path);
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  EXPECT_TRUE((*store)->read_only());
  Result<JobInfo> job = (*store)->get_job(id);
  ASSERT_TRUE(job.ok()) << job.status().to_string();
  EXPECT_EQ(job->counts.succeeded, 1);
  EXPECT_EQ((*store)->result_page(id, 0)->jsonl, committed_page);
  EXPECT_EQ((*store)->list_jobs({})->size(), 1u);

  Status submit = (*store)->submit(make_submission(2, "new"), std::nullopt).status();
  EXPECT_EQ(submit.code(), ErrorCode::kStorageReadOnly) << submit.to_string();
  EXPECT_TRUE(submit.is_transient());
  // The lease the writer held before the file became read-only.
  const Lease lease{.job_id = id, .owner = "exec", .epoch = 1};
  Status commit = (*store)->commit_page(lease, {ItemOutcome::success(1, "{}")}).status();
  EXPECT_EQ(commit.code(), ErrorCode::kStorageReadOnly) << commit.to_string();
  EXPECT_EQ((*store)->cancel(id).status().code(), ErrorCode::kStorageReadOnly);
}

TEST(JobStorage, ReadOnlyFileIsATransientErrorAndStaysReadable) {
  TempDir dir;
  const std::string path = dir.file("jobs.db");
  std::string id;
  std::string committed_page;
  {
    Result<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::open(path);
    ASSERT_TRUE(store.ok());
    Result<SubmitResult> submitted = (*store)->submit(make_submission(3, "ro"), std::nullopt);
    ASSERT_TRUE(submitted.ok());
    id = submitted->job.id;
    Result<std::optional<Lease>> lease = (*store)->acquire("exec", 60'000);
    ASSERT_TRUE(lease.ok() && lease->has_value());
    ASSERT_TRUE((*store)->commit_page(**lease, {ItemOutcome::success(0, R"({"v":1})")}).ok());
    committed_page = (*store)->result_page(id, 0)->jsonl;
  }
  ASSERT_EQ(chmod(path.c_str(), 0444), 0);
  synapse::testing::run_unprivileged(dir.path(),
                                     [&] { check_read_only_store(path, id, committed_page); });
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  EXPECT_TRUE(integrity_ok(path));
  Result<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::open(path);
  ASSERT_TRUE(store.ok());
  EXPECT_FALSE((*store)->read_only());
  EXPECT_EQ((*store)->cancel(id)->state, JobState::kCancelled);
}

// Issue 22: a read-only state directory (the file itself writable) stopped `synapse serve`:
// SQLite cannot create the -wal/-shm files there. The store must open read-only and answer reads.
TEST(JobStorage, ReadOnlyDirectoryOpensReadOnlyAndStaysReadable) {
  TempDir dir;
  const std::string state = dir.file("state");
  ASSERT_TRUE(std::filesystem::create_directory(state));
  const std::string path = state + "/jobs.db";
  std::string id;
  std::string committed_page;
  {
    Result<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::open(path);
    ASSERT_TRUE(store.ok());
    Result<SubmitResult> submitted = (*store)->submit(make_submission(3, "ro"), std::nullopt);
    ASSERT_TRUE(submitted.ok());
    id = submitted->job.id;
    Result<std::optional<Lease>> lease = (*store)->acquire("exec", 60'000);
    ASSERT_TRUE(lease.ok() && lease->has_value());
    ASSERT_TRUE((*store)->commit_page(**lease, {ItemOutcome::success(0, R"({"v":1})")}).ok());
    committed_page = (*store)->result_page(id, 0)->jsonl;
  }
  ASSERT_EQ(chmod(path.c_str(), 0666), 0);
  ASSERT_EQ(chmod(state.c_str(), 0555), 0);
  synapse::testing::run_unprivileged(dir.path(),
                                     [&] { check_read_only_store(path, id, committed_page); });
  ASSERT_EQ(chmod(state.c_str(), 0755), 0);
  EXPECT_TRUE(integrity_ok(path));
}

// A crash image of a live database: the file, its WAL and its shared index, copied while the
// writer still holds them (as after a SIGKILL).
struct CrashImage {
  std::string path;
  std::string job_id;
};

CrashImage crash_image(const TempDir& dir) {
  CrashImage image{.path = dir.file("copy.db"), .job_id = ""};
  const std::string live = dir.file("live.db");
  Result<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::open(live);
  EXPECT_TRUE(store.ok());
  Result<SubmitResult> submitted = (*store)->submit(make_submission(2, "wal"), std::nullopt);
  EXPECT_TRUE(submitted.ok());
  image.job_id = submitted->job.id;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::filesystem::copy_file(live + suffix, image.path + suffix);
  }
  return image;
}

std::string open_and_capture_log(const std::string& path, const std::string& job_id,
                                 ErrorCode* job_lookup) {
  ::testing::internal::CaptureStderr();
  Result<std::unique_ptr<SqliteJobStore>> store = SqliteJobStore::open(path);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(store.ok()) << store.status().to_string();
  *job_lookup = store.ok() ? (*store)->get_job(job_id).status().code() : ErrorCode::kInternal;
  return log;
}

TEST(JobStorage, ACrashImageWithItsWalOpensWithoutComplaint) {
  TempDir dir;
  const CrashImage image = crash_image(dir);
  ErrorCode lookup = ErrorCode::kInternal;
  const std::string log = open_and_capture_log(image.path, image.job_id, &lookup);
  EXPECT_EQ(lookup, ErrorCode::kOk);
  EXPECT_EQ(log.find("WAL"), std::string::npos) << log;
}

// Issue 22: a deleted or garbled WAL made a committed job vanish with no log line. SQLite cannot
// bring it back, but the open must say what happened.
TEST(JobStorage, ARemovedWalIsLogged) {
  TempDir dir;
  const CrashImage image = crash_image(dir);
  std::filesystem::remove(image.path + "-wal");
  ErrorCode lookup = ErrorCode::kOk;
  const std::string log = open_and_capture_log(image.path, image.job_id, &lookup);
  EXPECT_EQ(lookup, ErrorCode::kJobNotFound);
  EXPECT_NE(log.find("WAL file was removed"), std::string::npos) << log;
  EXPECT_NE(log.find("quick_check"), std::string::npos) << log;
}

TEST(JobStorage, AGarbledWalIsLogged) {
  TempDir dir;
  const CrashImage image = crash_image(dir);
  {
    std::fstream wal(image.path + "-wal", std::ios::in | std::ios::out | std::ios::binary);
    const std::string garbage(32, '\x5a');
    wal.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  ErrorCode lookup = ErrorCode::kOk;
  const std::string log = open_and_capture_log(image.path, image.job_id, &lookup);
  EXPECT_EQ(lookup, ErrorCode::kJobNotFound);
  EXPECT_NE(log.find("WAL file was damaged"), std::string::npos) << log;
}

}  // namespace
}  // namespace synapse::jobs
