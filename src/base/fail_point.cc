// SPDX-License-Identifier: Apache-2.0
#include "base/fail_point.h"

#include <charconv>
#include <cstdlib>
#include <string>
#include <unordered_map>

namespace synapse {
namespace {

std::unordered_map<std::string, int64_t> parse_fail_points() {
  std::unordered_map<std::string, int64_t> points;
  // Read once, before threads could change the environment (first use is at start-up).
  const char* env = std::getenv("SYNAPSE_FAIL_POINTS");  // NOLINT(concurrency-mt-unsafe)
  std::string_view text = env != nullptr ? env : "";
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const size_t eq = item.find('=');
    if (eq != std::string_view::npos) {
      int64_t value = 0;
      const std::string_view v = item.substr(eq + 1);
      if (std::from_chars(v.data(), v.data() + v.size(), value).ec == std::errc()) {
        points[std::string(item.substr(0, eq))] = value;
      }
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return points;
}

}  // namespace

int64_t fail_point(std::string_view name) {
  static const std::unordered_map<std::string, int64_t> points = parse_fail_points();
  if (points.empty()) return 0;
  const auto it = points.find(std::string(name));
  return it == points.end() ? 0 : it->second;
}

}  // namespace synapse
