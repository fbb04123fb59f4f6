// SPDX-License-Identifier: Apache-2.0
// Fault injection for tests: named fail points compiled into every build, inert unless the
// SYNAPSE_FAILPOINTS environment variable names them (docs/testing-faults.md). A test sets them to
// make a rare event happen every time: a crash, an abort, a hang or a runaway allocation at the
// Nth engine step or when a prompt contains a marker (action points), or a delay that makes a
// race certain (value points, e.g. a slow writer during shutdown).
//
//   SYNAPSE_FAILPOINTS="engine.step=crash@3,engine.prompt=hang:<<HANG>>,http.write_delay_ms=100"
//
// Goals: nearly free when unset (one relaxed atomic load per action point), a bad value is a
// clear start-up error in every program that links this (never silently ignored), every name is
// listed in one table. Non-goals: turning points on or off while running; production use.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace synapse {

inline constexpr std::string_view kFailPointsEnv = "SYNAPSE_FAILPOINTS";

enum class FailPointKind : uint8_t {
  kValue,   // a number the code reads (0 when unset): name=N
  kAction,  // something done to the process when hit: name=action[@N][:marker]
};

enum class FailAction : uint8_t {
  kCrash,  // SIGSEGV, as a wild pointer would (an installed crash handler runs)
  kAbort,  // abort(): SIGABRT, as a failed SYN_CHECK
  kHang,   // sleeps forever; only a kill ends it
  kAlloc,  // allocates and touches memory until the process is killed
};

struct FailPointInfo {
  std::string_view name;
  FailPointKind kind;
  bool sees_text;  // action points whose hits carry text (a prompt) a marker can match
  std::string_view where;
};

// Every fail point the code has; names outside it are refused.
std::span<const FailPointInfo> fail_point_table();

struct FailPointSetting {
  std::string name;
  int64_t value = 0;    // value points
  FailAction action{};  // action points
  uint64_t at_hit = 1;  // action points: the Nth matching hit acts, counted from 1
  std::string marker;   // action points that see text: only hits whose text contains it match
  bool operator==(const FailPointSetting&) const = default;
};

// Parses "item,item,...", each `name=N` for a value point (0..1e9) or
// `name=crash|abort|hang|alloc[@N][:marker]` for an action point; the marker runs to the end of
// the item (it may hold '@', ':' and '=', not ','). Empty text: no settings. invalid_argument
// naming the item on an unknown name, action or number, a repeated name, a marker for a point
// without text, or text over its bounds.
Result<std::vector<FailPointSetting>> parse_fail_points(std::string_view text);
// The text parse_fail_points reads back as `settings`.
std::string fail_points_text(std::span<const FailPointSetting> settings);
std::string_view fail_action_name(FailAction action);

// A parsed configuration and its hit counts; thread-safe.
class FailPoints {
 public:
  explicit FailPoints(std::vector<FailPointSetting> settings);
  ~FailPoints();
  FailPoints(const FailPoints&) = delete;
  FailPoints& operator=(const FailPoints&) = delete;

  // Counts a hit of `name` whose text is `text` and says the action due now, if any: exactly one
  // hit (the Nth one that matches the marker) gets it, whichever thread it is on.
  std::optional<FailAction> hit(std::string_view name, std::string_view text);
  int64_t value(std::string_view name) const;  // 0 when unset
  bool has_actions() const { return has_actions_; }

 private:
  struct Point;
  std::vector<std::unique_ptr<Point>> points_;
  bool has_actions_ = false;
};

// Does `action` to this process, saying on stderr which point did it. Never returns.
[[noreturn]] void perform_fail_action(std::string_view name, FailAction action);

// The process's configuration, from SYNAPSE_FAILPOINTS, read once before main() runs. OK when
// unset, empty or valid; otherwise the error, which the program already printed before exiting
// with status 2 (a misspelt point would make a fault test pass for the wrong reason).
Status fail_points_status();

// A value point's value from SYNAPSE_FAILPOINTS; 0 when unset.
int64_t fail_point_value(std::string_view name);

namespace fail_point_internal {
extern std::atomic<bool> g_actions_armed;
void hit(std::string_view name, std::string_view text);
}  // namespace fail_point_internal

// Whether any action point is set: callers check it before computing a hit's text.
inline bool fail_points_armed() {
  return fail_point_internal::g_actions_armed.load(std::memory_order_relaxed);
}

// An action point. Inert (one relaxed load) unless SYNAPSE_FAILPOINTS sets an action point.
inline void fail_point(std::string_view name, std::string_view text = {}) {
  if (fail_points_armed()) [[unlikely]] {
    fail_point_internal::hit(name, text);
  }
}

}  // namespace synapse
