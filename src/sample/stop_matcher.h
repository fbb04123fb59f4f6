// SPDX-License-Identifier: Apache-2.0
// Stop strings matched on generated text across token boundaries. Feed each decoded piece; the
// matcher returns what is safe to show now and holds back a suffix that could still begin a stop
// string. When a stop string completes, the text before it is returned and the stop string itself
// is not (as OpenAI does). Works on bytes: fed whole UTF-8 characters (StreamingDetokenizer's
// pieces), it only ever returns whole characters, since stop strings must be valid UTF-8.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace synapse {

class StopMatcher {
 public:
  static constexpr size_t kMaxStops = 16;
  static constexpr size_t kMaxStopBytes = 128;

  // Errors (kInvalidArgument, field "stop"): more than kMaxStops strings, an empty one, one
  // longer than kMaxStopBytes, one that is not valid UTF-8. No stop strings is allowed.
  static Result<StopMatcher> create(std::vector<std::string> stops);

  struct Step {
    std::string_view text;  // safe to emit now; valid until the next call
    bool stopped = false;   // a stop string completed; `text` is everything before it
  };

  // After a stop, further pieces are ignored and return {"", true}.
  Step feed(std::string_view piece);
  // At the end of generation (no stop): the text held back. Empty after a stop.
  std::string_view flush();

  bool stopped() const { return matched_.has_value(); }
  // Index in the creation list of the stop string that matched (the earliest in the text; the
  // first listed on a tie).
  std::optional<size_t> matched_stop() const { return matched_; }

 private:
  explicit StopMatcher(std::vector<std::string> stops);

  std::vector<std::string> stops_;
  size_t max_stop_bytes_ = 0;
  std::string pending_;  // held back: a suffix that is a proper prefix of some stop string
  std::string out_;
  std::optional<size_t> matched_;
};

}  // namespace synapse
