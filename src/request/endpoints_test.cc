// SPDX-License-Identifier: Apache-2.0
#include "request/endpoints.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace synapse::request {
namespace {

TEST(Endpoints, EachMethodAndPathAppearsOnce) {
  std::set<std::string> seen;
  for (const Endpoint& e : endpoints()) {
    EXPECT_TRUE(seen.insert(std::string(e.method) + " " + std::string(e.path)).second)
        << e.method << " " << e.path;
  }
}

TEST(Endpoints, JobItemsAreTheModelsPostEndpoints) {
  EXPECT_EQ(job_item_urls(), (std::vector<std::string>{"/v1/completions", "/v1/chat/completions",
                                                       "/v1/embeddings"}));
  ASSERT_NE(find_job_endpoint("/v1/embeddings"), nullptr);
  EXPECT_EQ(find_job_endpoint("/v1/embeddings")->kind, EndpointKind::kEmbeddings);
  EXPECT_EQ(find_job_endpoint("/v1/rerank"), nullptr);  // not a job item
  EXPECT_EQ(find_job_endpoint("/v1/jobs"), nullptr);
}

TEST(Endpoints, PatternsMatchOneSegmentPerParameter) {
  ASSERT_NE(find_endpoint("/v1/jobs/job_1/results"), nullptr);
  EXPECT_EQ(find_endpoint("/v1/jobs/job_1/results")->kind, EndpointKind::kJobResults);
  EXPECT_EQ(find_endpoint("/v1/jobs//results"), nullptr);
  EXPECT_EQ(find_endpoint("/v1/jobs/a/b/c"), nullptr);
  EXPECT_EQ(metrics_label("/v1/files/file-9/content"), "/v1/files/{id}/content");
  EXPECT_EQ(metrics_label("/no/such/path"), "other");
  ASSERT_NE(find_endpoint("/health"), nullptr);
  EXPECT_TRUE(find_endpoint("/health")->open);
  EXPECT_FALSE(find_endpoint("/v1/models")->open);
}

}  // namespace
}  // namespace synapse::request
