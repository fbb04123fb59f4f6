// SPDX-License-Identifier: Apache-2.0
#include "hub/http_client.h"

#include <gtest/gtest.h>

namespace synapse::hub {
namespace {

TEST(HttpClient, EncodesPathsAndRevisions) {
  EXPECT_EQ(encode_path("sub dir/model Q4+.gguf"), "sub%20dir/model%20Q4%2B.gguf");
  EXPECT_EQ(encode_segment("refs/pr/1"), "refs%2Fpr%2F1");
  EXPECT_EQ(encode_segment("main"), "main");
}

TEST(HttpClient, ResolvesRedirectLocations) {
  const std::string base = "https://huggingface.co/org/repo/resolve/main/m.gguf";
  EXPECT_EQ(*resolve_url(base, "/org/new/resolve/main/m.gguf"),
            "https://huggingface.co/org/new/resolve/main/m.gguf");
  EXPECT_EQ(*resolve_url(base, "https://cdn.example/x?sig=1"), "https://cdn.example/x?sig=1");
  EXPECT_EQ(*resolve_url(base, "other.gguf"),
            "https://huggingface.co/org/repo/resolve/main/other.gguf");
}

TEST(HttpClient, AnUnreachableHostIsHubUnavailable) {
  HttpRequest request;
  request.url = "http://127.0.0.1:1/nothing";  // port 1: refused at once
  request.connect_timeout_s = 5;
  const Result<HttpResponse> response = http_fetch(request);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), ErrorCode::kHubUnavailable);
}

}  // namespace
}  // namespace synapse::hub
