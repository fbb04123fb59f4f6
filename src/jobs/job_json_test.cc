// SPDX-License-Identifier: Apache-2.0
// The JSON shapes shared by the /v1/jobs routes and `synapse jobs --json`, and the filter parser.
#include "jobs/job_json.h"

#include <gtest/gtest.h>

namespace synapse::jobs {
namespace {

JobInfo sample_job() {
  JobInfo job;
  job.id = "job_0123";
  job.request_digest = "abcd";
  job.job_class = JobClass::kBackground;
  job.state = JobState::kRunning;
  job.counts = {.total = 5, .succeeded = 2, .failed = 1, .invalid_lines = 1};
  job.attempts = 1;
  job.page_count = 2;
  job.created_ms = 1'700'000'000'999;
  job.updated_ms = 1'700'000'010'000;
  job.execution_deadline_ms = 1'700'086'400'000;
  job.retention_ttl_ms = 3'600'000;
  job.line_errors = {{.line = 3, .code = ErrorCode::kInvalidJson, .message = "not valid JSON"}};
  return job;
}

TEST(JobJson, RunningJob) {
  const nlohmann::ordered_json j = job_json(sample_job());
  EXPECT_EQ(j.dump(),
            R"({"id":"job_0123","object":"job","status":"running","class":"background",)"
            R"("created_at":1700000000,"updated_at":1700000010,)"
            R"("counts":{"total":5,"succeeded":2,"failed":1,"pending":2,"invalid_lines":1},)"
            R"("pages":2,"attempts":1,)"
            R"("line_errors":[{"line":3,"code":"invalid_json","message":"not valid JSON"}],)"
            R"("request_digest":"abcd","expires_at":1700086400})");
}

TEST(JobJson, FailedJobHasErrorFinishAndRetentionExpiry) {
  JobInfo job = sample_job();
  job.state = JobState::kFailed;
  job.finished_ms = 1'700'000'020'000;
  job.error_code = ErrorCode::kModelNotFound;
  job.error_message = "no model";
  job.idempotency_key = "k1";
  job.line_errors.clear();
  const nlohmann::ordered_json j = job_json(job);
  EXPECT_EQ(j["finished_at"], 1'700'000'020);
  EXPECT_EQ(j["error"]["code"], "model_not_found");
  EXPECT_EQ(j["error"]["message"], "no model");
  EXPECT_EQ(j["idempotency_key"], "k1");
  EXPECT_FALSE(j.contains("line_errors"));
  EXPECT_EQ(j["expires_at"], 1'700'000'020 + 3600);  // finished + retention
}

TEST(JobJson, ResultPage) {
  ResultPage page{.job_id = "job_1",
                  .page = 1,
                  .first_item = 4,
                  .last_item = 5,
                  .item_count = 2,
                  .jsonl =
                      "{\"custom_id\":\"a\",\"response\":{\"x\":1}}\n"
                      "{\"custom_id\":\"b\",\"error\":{\"code\":\"c\",\"message\":\"m\"}}\n",
                  .next_page = 2};
  Result<nlohmann::ordered_json> j = result_page_json(page);
  ASSERT_TRUE(j.ok()) << j.status().to_string();
  EXPECT_EQ(j->dump(), R"({"object":"list","job_id":"job_1","page":1,"data":[)"
                       R"({"custom_id":"a","response":{"x":1}},)"
                       R"({"custom_id":"b","error":{"code":"c","message":"m"}}],)"
                       R"("next_page":2,"first_item":4,"last_item":5})");
  page.next_page.reset();
  EXPECT_TRUE((*result_page_json(page))["next_page"].is_null());
  page.jsonl = "not json\n";
  EXPECT_EQ(result_page_json(page).status().code(), ErrorCode::kInternal);
}

TEST(JobJson, List) {
  EXPECT_EQ(job_list_json({}, false).dump(),
            R"({"object":"list","data":[],"has_more":false,"last_id":null})");
  JobInfo second = sample_job();
  second.id = "job_4567";
  const nlohmann::ordered_json j = job_list_json({sample_job(), second}, true);
  EXPECT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["has_more"], true);
  EXPECT_EQ(j["last_id"], "job_4567");
}

TEST(JobJson, FilterParsing) {
  Result<JobFilter> none = parse_job_filter({});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->state);
  EXPECT_EQ(none->limit, kDefaultListLimit);
  Result<JobFilter> all = parse_job_filter(
      {.status = "completed", .job_class = "background", .limit = "7", .after = "job_9"});
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  EXPECT_EQ(all->state, JobState::kCompleted);
  EXPECT_EQ(all->job_class, JobClass::kBackground);
  EXPECT_EQ(all->limit, 7);
  EXPECT_EQ(all->after, "job_9");
  for (const JobFilterText& bad : std::vector<JobFilterText>{{.status = "done"},
                                                             {.job_class = "urgent"},
                                                             {.limit = "0"},
                                                             {.limit = "1001"},
                                                             {.limit = "5x"},
                                                             {.limit = ""},
                                                             {.after = ""}}) {
    Result<JobFilter> parsed = parse_job_filter(bad);
    EXPECT_EQ(parsed.status().code(), ErrorCode::kInvalidValue);
    EXPECT_FALSE(parsed.status().where().field.empty());
  }
  EXPECT_EQ(parse_non_negative("12", "page").value(), 12);
  EXPECT_EQ(parse_non_negative("-1", "page").status().code(), ErrorCode::kInvalidValue);
  EXPECT_EQ(parse_non_negative("1.5", "page").status().where().field, "page");
}

TEST(JobJson, WhichNodeRanAJob) {
  EXPECT_EQ(executor_node("synapse-serve/gpu-a:4242/worker-1"), "gpu-a:4242");
  EXPECT_EQ(executor_node("synapse-serve/gpu-a:4242"), "gpu-a:4242");
  EXPECT_EQ(executor_node("test-executor"), "test-executor");
  JobInfo job;
  EXPECT_EQ(job_node_text(job, {}), "-");
  const std::vector<JobEvent> events = {
      {.kind = "submitted", .detail = "3 items"},
      {.kind = "leased", .detail = "owner synapse-serve/a:1/worker-0, node a:1/x, epoch 1"},
      {.kind = "page", .detail = "pages 0..0, 16 items, epoch 1, node a:1/x"},
      {.kind = "leased",
       .detail = "owner synapse-serve/b:2/worker-1, epoch 2, taken over from expired lease of "
                 "synapse-serve/a:1/worker-0"},
      {.kind = "leased", .detail = "owner synapse-serve/b:2/worker-0, epoch 3"}};
  EXPECT_EQ(job_node_text(job, events), "b:2 +1");  // finished: the last lease's node
  job.lease_owner = "synapse-serve/c:3/worker-0";   // running: the lease holder's
  EXPECT_EQ(job_node_text(job, events), "c:3 +2");
  job.lease_owner = "synapse-serve/a:1/worker-1";
  EXPECT_EQ(job_node_text(job, events), "a:1 +1");
}

}  // namespace
}  // namespace synapse::jobs
