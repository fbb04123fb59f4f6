// SPDX-License-Identifier: Apache-2.0
// The Prometheus text exposition: every line is a comment or a valid sample, every metric has
// HELP and TYPE before its samples, histogram buckets are cumulative and end at +Inf == count.
#include "serve/metrics.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace synapse::serve {
namespace {

TEST(ServiceMetrics, RendersValidExpositionFormat) {
  ServiceMetrics m;
  m.count_request(RequestClass::kInteractive, "stop");
  m.count_request(RequestClass::kInteractive, "stop");
  m.count_request(RequestClass::kBackground, "queue_full");
  m.set_queue_depth(RequestClass::kBatch, 3);
  m.set_running_sequences(RequestClass::kBackground, 2);
  m.add_prompt_tokens(100, 40);
  m.add_generated_tokens(7);
  m.observe_time_to_first_token(RequestClass::kInteractive, 0.02);
  m.observe_time_to_first_token(RequestClass::kInteractive, 100.0);
  m.observe_inter_token_latency(0.004);
  m.observe_step(3, 130, 0.05);
  m.set_kv_pages(12, 64);
  m.count_prefix_lookup(true);
  const std::string text = m.render_prometheus();

  const std::regex sample_re(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"\\\n]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\\n]*")*)?\})? (-?[0-9.eE+-]+|\+Inf|-Inf|NaN)$)");
  const std::regex comment_re(R"(^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$)");
  std::set<std::string> typed;
  std::map<std::string, std::string> types;
  std::istringstream in(text);
  std::string line;
  size_t samples = 0;
  while (std::getline(in, line)) {
    std::smatch match;
    if (line.rfind("#", 0) == 0) {
      ASSERT_TRUE(std::regex_match(line, match, comment_re)) << line;
      if (match[1] == "TYPE") types[match[2]] = match[3];
      continue;
    }
    ASSERT_TRUE(std::regex_match(line, match, sample_re)) << line;
    std::string name = match[1];
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s = suffix;
      if (!types.count(name) && name.size() > s.size() &&
          name.compare(name.size() - s.size(), s.size(), s) == 0) {
        name.resize(name.size() - s.size());
      }
    }
    EXPECT_TRUE(types.count(name)) << "sample before its TYPE: " << line;
    ++samples;
  }
  EXPECT_GT(samples, 50u);
  EXPECT_NE(text.find("synapse_requests_total{class=\"interactive\",status=\"stop\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("synapse_queue_depth{class=\"batch\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("synapse_running_sequences{class=\"background\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("synapse_running_sequences{class=\"interactive\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("synapse_kv_pages_in_use 12\n"), std::string::npos);
  EXPECT_NE(text.find("synapse_prompt_tokens_cached_total 40\n"), std::string::npos);
  EXPECT_NE(text.find("synapse_prefix_cache_lookups_total{result=\"hit\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("synapse_time_to_first_token_seconds_bucket{class=\"interactive\","
                      "le=\"0.025\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("synapse_time_to_first_token_seconds_bucket{class=\"interactive\","
                      "le=\"+Inf\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("synapse_time_to_first_token_seconds_count{class=\"interactive\"} 2\n"),
            std::string::npos);
  EXPECT_EQ(types["synapse_time_to_first_token_seconds"], "histogram");
  EXPECT_EQ(types["synapse_requests_total"], "counter");
}

TEST(Histogram, BucketsByUpperBound) {
  Histogram h({1.0, 2.0});
  h.observe(1.0);  // le="1" includes 1
  h.observe(1.5);
  h.observe(5.0);
  EXPECT_EQ(h.counts(), (std::vector<uint64_t>{1, 1, 1}));
  EXPECT_EQ(h.count(), 3u);
  EXPECT_DOUBLE_EQ(h.sum(), 7.5);
}

}  // namespace
}  // namespace synapse::serve
