// SPDX-License-Identifier: Apache-2.0
#include "server/http_metrics.h"

#include <array>

namespace synapse::server {
namespace {

std::string route_label(std::string_view path) {
  static constexpr std::array<std::string_view, 8> kRoutes = {
      "/health",   "/v1/models",  "/v1/completions", "/v1/chat/completions",
      "/tokenize", "/detokenize", "/metrics",        "/v1/embeddings"};
  for (std::string_view r : kRoutes) {
    if (path == r) return std::string(r);
  }
  return "other";
}

}  // namespace

void HttpMetrics::count(std::string_view path, int status) {
  std::lock_guard lock(mu_);
  ++requests_[{route_label(path), status}];
}

std::string HttpMetrics::render_prometheus() const {
  std::string out =
      "# HELP synapse_http_requests_total HTTP requests answered, by route and status.\n"
      "# TYPE synapse_http_requests_total counter\n";
  std::lock_guard lock(mu_);
  for (const auto& [key, n] : requests_) {
    out += "synapse_http_requests_total{route=\"" + key.first + "\",status=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  }
  return out;
}

}  // namespace synapse::server
