// SPDX-License-Identifier: Apache-2.0
#include "server/http_metrics.h"

#include "request/endpoints.h"

namespace synapse::server {

void HttpMetrics::count(std::string_view path, int status) {
  std::lock_guard lock(mu_);
  ++requests_[{request::metrics_label(path), status}];
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
