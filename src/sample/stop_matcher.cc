// SPDX-License-Identifier: Apache-2.0
#include "sample/stop_matcher.h"

#include <algorithm>

#include "base/utf8.h"

namespace synapse {

Result<StopMatcher> StopMatcher::create(std::vector<std::string> stops) {
  const auto error = [](std::string message) {
    return Status(ErrorCode::kInvalidArgument, std::move(message)).with_field("stop");
  };
  if (stops.size() > kMaxStops) {
    return error("at most " + std::to_string(kMaxStops) + " stop strings, got " +
                 std::to_string(stops.size()));
  }
  for (size_t i = 0; i < stops.size(); ++i) {
    const std::string& s = stops[i];
    const std::string which = "stop string " + std::to_string(i);
    if (s.empty()) return error(which + " is empty");
    if (s.size() > kMaxStopBytes) {
      return error(which + " is " + std::to_string(s.size()) + " bytes, more than " +
                   std::to_string(kMaxStopBytes));
    }
    if (!is_valid_utf8(s)) return error(which + " is not valid UTF-8");
  }
  return StopMatcher(std::move(stops));
}

StopMatcher::StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  for (const std::string& s : stops_) max_stop_bytes_ = std::max(max_stop_bytes_, s.size());
  pending_.reserve(2 * max_stop_bytes_);
  out_.reserve(2 * max_stop_bytes_);
}

StopMatcher::Step StopMatcher::feed(std::string_view piece) {
  if (stopped()) return {std::string_view(), true};
  const size_t old_size = pending_.size();
  pending_.append(piece);

  // The earliest stop string in the pending text. pending_ held no complete stop before, so a
  // match must end in the new piece: start each search where that is still possible.
  size_t match_at = std::string::npos;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const std::string& s = stops_[i];
    const size_t from = old_size >= s.size() ? old_size - s.size() + 1 : 0;
    const size_t at = pending_.find(s, from);
    if (at < match_at) {
      match_at = at;
      matched_ = i;
    }
  }
  if (match_at != std::string::npos) {
    out_.assign(pending_, 0, match_at);
    pending_.clear();
    return {out_, true};
  }

  // Hold back the longest suffix that is a proper prefix of some stop string.
  const std::string_view text = pending_;
  size_t hold = 0;
  const size_t longest = max_stop_bytes_ > 0 ? std::min(text.size(), max_stop_bytes_ - 1) : 0;
  for (size_t len = longest; len > 0 && hold == 0; --len) {
    const std::string_view suffix = text.substr(text.size() - len);
    for (const std::string& s : stops_) {
      if (s.size() > len && std::string_view(s).starts_with(suffix)) {
        hold = len;
        break;
      }
    }
  }
  const size_t emit = pending_.size() - hold;
  out_.assign(pending_, 0, emit);
  pending_.erase(0, emit);
  return {out_, false};
}

std::string_view StopMatcher::flush() {
  if (stopped()) return {};
  out_.swap(pending_);
  pending_.clear();
  return out_;
}

}  // namespace synapse
