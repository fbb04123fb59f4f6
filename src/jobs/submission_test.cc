// SPDX-License-Identifier: Apache-2.0
#include "jobs/submission.h"

#include <gtest/gtest.h>

#include <string>

namespace synapse::jobs {
namespace {

// The urls the server's endpoint table lets items name (request::job_item_urls(); the jobs
// layer takes them as a limit).
SubmissionLimits with_urls() {
  SubmissionLimits limits;
  limits.item_urls = {"/v1/completions", "/v1/chat/completions", "/v1/embeddings"};
  return limits;
}

std::string line(std::string_view custom_id, std::string_view url = "/v1/completions",
                 std::string_view body = R"({"prompt":"hi","max_tokens":4})") {
  return R"({"custom_id":")" + std::string(custom_id) + R"(","method":"POST","url":")" +
         std::string(url) + R"(","body":)" + std::string(body) + "}";
}

TEST(Submission, ParsesJsonlLines) {
  const std::string text = line("a") + "\n" +
                           line("b", "/v1/chat/completions", R"({"messages":[],"model":"m"})") +
                           "\r\n\n" + line("c", "/v1/embeddings", R"({"input":"x"})") + "\n";
  Result<Submission> parsed = parse_jsonl_submission(text, JobClass::kBackground);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  ASSERT_EQ(parsed->requests.size(), 3u);
  EXPECT_TRUE(parsed->line_errors.empty());
  EXPECT_EQ(parsed->job_class, JobClass::kBackground);
  EXPECT_EQ(parsed->requests[1].custom_id, "b");
  EXPECT_EQ(parsed->requests[1].url, "/v1/chat/completions");
  EXPECT_EQ(parsed->requests[1].body, R"({"messages":[],"model":"m"})");
}

TEST(Submission, ReportsBadLinesAndKeepsTheValidOnes) {
  const std::string text = line("ok1") + "\n" +  // 1
                           "{not json\n" +       // 2
                           R"({"method":"POST","url":"/v1/completions","body":{}})"
                           "\n" +  // 3
                           line("x", "/v1/images") +
                           "\n" +                // 4
                           line("ok1") + "\n" +  // 5
                           R"({"custom_id":"y","method":"GET","url":"/v1/completions","body":{}})"
                           "\n" +  // 6
                           line("z", "/v1/completions", "[1]") +
                           "\n" +                         // 7
                           std::string(70, '[') + "\n" +  // 8
                           line("ok2") + "\n";            // 9
  Result<Submission> parsed = parse_jsonl_submission(text, JobClass::kBatch, with_urls());
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  ASSERT_EQ(parsed->requests.size(), 2u);
  EXPECT_EQ(parsed->requests[0].custom_id, "ok1");
  EXPECT_EQ(parsed->requests[1].custom_id, "ok2");
  const std::vector<std::pair<int64_t, ErrorCode>> expected = {
      {2, ErrorCode::kInvalidJson},  {3, ErrorCode::kMissingParameter},
      {4, ErrorCode::kInvalidValue}, {5, ErrorCode::kDuplicateCustomId},
      {6, ErrorCode::kInvalidValue}, {7, ErrorCode::kInvalidType},
      {8, ErrorCode::kInvalidJson},  // too deep
  };
  ASSERT_EQ(parsed->line_errors.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(parsed->line_errors[i].line, expected[i].first) << i;
    EXPECT_EQ(parsed->line_errors[i].code, expected[i].second) << parsed->line_errors[i].message;
    EXPECT_FALSE(parsed->line_errors[i].message.empty());
  }
}

TEST(Submission, EnforcesLimits) {
  SubmissionLimits limits;
  limits.max_line_bytes = 120;
  limits.max_requests = 2;
  const std::string text =
      line("a") + "\n" +
      line("b", "/v1/completions", R"({"prompt":")" + std::string(200, 'x') + R"("})") + "\n" +
      line("c") + "\n" + line("d") + "\n";
  Result<Submission> parsed = parse_jsonl_submission(text, JobClass::kBatch, limits);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->requests.size(), 2u);
  ASSERT_EQ(parsed->line_errors.size(), 2u);
  EXPECT_EQ(parsed->line_errors[0].line, 2);
  EXPECT_EQ(parsed->line_errors[0].code, ErrorCode::kLimitExceeded);
  EXPECT_EQ(parsed->line_errors[1].line, 4);
  EXPECT_EQ(parsed->line_errors[1].code, ErrorCode::kLimitExceeded);

  limits.max_input_bytes = 10;
  EXPECT_EQ(parse_jsonl_submission(text, JobClass::kBatch, limits).status().code(),
            ErrorCode::kLimitExceeded);
}

// Issue 22: 100 lines over a 50-request job, with details kept for 10: every rejected line is
// counted, only the sample is detailed.
TEST(Submission, CountsEveryInvalidLineBeyondTheDetailedSample) {
  SubmissionLimits limits;
  limits.max_requests = 50;
  limits.max_line_errors = 10;
  std::string text;
  for (int i = 0; i < 100; ++i) text += line("id" + std::to_string(i)) + "\n";
  Result<Submission> parsed = parse_jsonl_submission(text, JobClass::kBatch, limits);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->requests.size(), 50u);
  EXPECT_EQ(parsed->invalid_lines, 50);
  EXPECT_EQ(parsed->line_errors.size(), 10u);

  // restrict_to_endpoint counts what it moves out too.
  std::string mixed;
  for (int i = 0; i < 30; ++i) {
    mixed += line("m" + std::to_string(i), i % 2 ? "/v1/embeddings" : "/v1/completions") + "\n";
  }
  Result<Submission> batch = parse_jsonl_submission(mixed, JobClass::kBatch, limits);
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE(restrict_to_endpoint(*batch, "/v1/completions", limits).ok());
  EXPECT_EQ(batch->requests.size(), 15u);
  EXPECT_EQ(batch->invalid_lines, 15);
  EXPECT_EQ(batch->line_errors.size(), 10u);
}

TEST(Submission, HostileJsonIsInvalidJson) {
  const std::string deep = std::string(60000, '[') + std::string(60000, ']');
  const std::string nested = "{\"a\":" + deep + ",\"b\":" + deep + "}";
  EXPECT_EQ(parse_json_submission(nested).status().code(), ErrorCode::kInvalidJson);
  Result<Submission> lines = parse_jsonl_submission(
      nested + "\n" + line("ok") + "\n" +
          R"({"custom_id":"d","custom_id":"e","method":"POST","url":"/v1/completions","body":{}})" +
          "\n" + line("n", "/v1/completions", R"({"max_tokens":99999999999999999999})") + "\n",
      JobClass::kBatch);
  ASSERT_TRUE(lines.ok()) << lines.status().to_string();
  ASSERT_EQ(lines->line_errors.size(), 3u);
  for (const LineError& e : lines->line_errors) {
    EXPECT_EQ(e.code, ErrorCode::kInvalidJson) << e.message;
  }
  EXPECT_NE(lines->line_errors[1].message.find("custom_id"), std::string::npos);
  EXPECT_NE(lines->line_errors[2].message.find("99999999999999999999"), std::string::npos);
  // The JSON form refuses a repeated key as well.
  EXPECT_EQ(parse_json_submission(R"({"requests":[],"requests":[]})").status().code(),
            ErrorCode::kInvalidJson);
}

TEST(Submission, NoValidLineIsAnError) {
  Result<Submission> parsed = parse_jsonl_submission("nope\n\n", JobClass::kBatch);
  EXPECT_EQ(parsed.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(parsed.status().message().find("line 1"), std::string::npos);
  EXPECT_EQ(parse_jsonl_submission("", JobClass::kBatch).status().code(),
            ErrorCode::kInvalidArgument);
}

TEST(Submission, ParsesTheJsonForm) {
  Result<Submission> parsed = parse_json_submission(
      R"({"class":"background","execution_ttl_s":60,"requests":[
          {"custom_id":"a","url":"/v1/completions","body":{"prompt":"p"}},
          {"custom_id":"b","url":"/v1/nope","body":{}},
          {"custom_id":"c","method":"POST","url":"/v1/embeddings","body":{"input":"x"}}]})",
      with_urls());
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->job_class, JobClass::kBackground);
  EXPECT_EQ(parsed->execution_ttl_ms, 60'000);
  ASSERT_EQ(parsed->requests.size(), 2u);
  ASSERT_EQ(parsed->line_errors.size(), 1u);
  EXPECT_EQ(parsed->line_errors[0].line, 2);

  EXPECT_EQ(parse_json_submission(R"({"requests":{}})").status().code(), ErrorCode::kInvalidType);
  EXPECT_EQ(parse_json_submission(R"({"class":"interactive","requests":[]})").status().code(),
            ErrorCode::kInvalidValue);
  EXPECT_EQ(parse_json_submission(R"({"class":1,"requests":[]})").status().code(),
            ErrorCode::kInvalidType);
  EXPECT_EQ(parse_json_submission("[").status().code(), ErrorCode::kInvalidJson);
  EXPECT_EQ(parse_json_submission("{}").status().code(), ErrorCode::kMissingParameter);
}

TEST(Submission, DigestIsCanonical) {
  // Key order and spacing in the body do not change the digest; content and class do.
  Result<Submission> a =
      parse_jsonl_submission(line("a", "/v1/completions", R"({"x":1,"y":2})"), JobClass::kBatch);
  Result<Submission> b = parse_jsonl_submission(
      line("a", "/v1/completions", R"({ "y": 2, "x": 1 })"), JobClass::kBatch);
  Result<Submission> c =
      parse_jsonl_submission(line("a", "/v1/completions", R"({"x":1,"y":3})"), JobClass::kBatch);
  Result<Submission> d = parse_jsonl_submission(line("a", "/v1/completions", R"({"x":1,"y":2})"),
                                                JobClass::kBackground);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok() && d.ok());
  EXPECT_EQ(submission_digest(*a), submission_digest(*b));
  EXPECT_NE(submission_digest(*a), submission_digest(*c));
  EXPECT_NE(submission_digest(*a), submission_digest(*d));
  EXPECT_EQ(submission_digest(*a).size(), 64u);
}

}  // namespace
}  // namespace synapse::jobs
