// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the SYNAPSE_FAILPOINTS parser (base/fail_point.h). Any input must parse
// or fail with invalid_argument; an accepted one names only known points, each once, with bounded
// markers, and writes back (fail_points_text) to text that parses to the same settings. Hits are
// counted without acting: the Nth matching hit, and only it, returns the action.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "base/fail_point.h"

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace synapse;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Result<std::vector<FailPointSetting>> settings = parse_fail_points(text);
  if (!settings.ok()) {
    require(settings.status().code() == ErrorCode::kInvalidArgument);
    return 0;
  }
  for (size_t i = 0; i < settings->size(); ++i) {
    const FailPointSetting& s = (*settings)[i];
    bool known = false;
    for (const FailPointInfo& info : fail_point_table()) known = known || info.name == s.name;
    require(known);
    require(s.at_hit >= 1 && s.marker.size() <= 256);
    for (size_t j = 0; j < i; ++j) require((*settings)[j].name != s.name);
  }
  const Result<std::vector<FailPointSetting>> again =
      parse_fail_points(fail_points_text(*settings));
  require(again.ok() && *again == *settings);
  FailPoints points(*settings);
  for (const FailPointSetting& s : *settings) {
    bool action = false;
    for (const FailPointInfo& info : fail_point_table()) {
      if (info.name == s.name) action = info.kind == FailPointKind::kAction;
    }
    if (!action) {
      require(points.value(s.name) == s.value && !points.hit(s.name, "").has_value());
      continue;
    }
    if (s.at_hit > 64) continue;
    for (uint64_t n = 1; n <= s.at_hit + 1; ++n) {
      require(points.hit(s.name, s.marker).has_value() == (n == s.at_hit));
    }
  }
  return 0;
}
