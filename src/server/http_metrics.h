// SPDX-License-Identifier: Apache-2.0
// HTTP request counts by route and status for GET /metrics (Prometheus text), counted by the
// server's logger after each response is written. Routes are a fixed set, so a client cannot grow
// the label space by inventing paths.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace synapse::server {

class HttpMetrics {
 public:
  void count(std::string_view path, int status);
  std::string render_prometheus() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
};

}  // namespace synapse::server
