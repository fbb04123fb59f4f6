// SPDX-License-Identifier: Apache-2.0
#include "base/fail_point.h"

#include <array>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "base/echo.h"

namespace synapse {
namespace {

using Kind = FailPointKind;

constexpr std::array kTable = {
    FailPointInfo{"engine.step", Kind::kAction, false,
                  "a service's engine loop, each step that runs work (N counts the steps of the "
                  "process)"},
    FailPointInfo{"engine.prompt", Kind::kAction, true,
                  "a service's engine loop, as a request starts running; the text is its prompt, "
                  "detokenized"},
    FailPointInfo{"serve.step_delay_ms", Kind::kValue, false,
                  "sleeps this long before each engine step"},
    FailPointInfo{"http.write_delay_ms", Kind::kValue, false,
                  "sleeps this long before each write of a streamed response"},
};

constexpr std::array kActions = {
    std::pair{FailAction::kCrash, std::string_view("crash")},
    std::pair{FailAction::kAbort, std::string_view("abort")},
    std::pair{FailAction::kHang, std::string_view("hang")},
    std::pair{FailAction::kAlloc, std::string_view("alloc")},
};

// Bounds: the variable is set by tests, but it is still input, and the fuzz target reads it.
constexpr size_t kMaxTextBytes = 4096;
constexpr size_t kMaxMarkerBytes = 256;
constexpr int64_t kMaxValue = 1'000'000'000;
constexpr uint64_t kMaxHit = uint64_t{1} << 40;

const FailPointInfo* find_info(std::string_view name) {
  for (const FailPointInfo& info : kTable) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

std::optional<FailAction> action_from_name(std::string_view name) {
  for (const auto& [action, text] : kActions) {
    if (text == name) return action;
  }
  return std::nullopt;
}

template <typename T>
std::optional<T> parse_number(std::string_view text) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

Status item_error(std::string_view item, std::string_view why) {
  return Status(ErrorCode::kInvalidArgument, std::string(kFailPointsEnv) + ": '" +
                                                 clip_for_echo(item) + "': " + std::string(why));
}

Result<FailPointSetting> parse_item(std::string_view item) {
  const size_t eq = item.find('=');
  if (eq == std::string_view::npos) return item_error(item, "expected name=value");
  FailPointSetting setting;
  setting.name = std::string(item.substr(0, eq));
  const FailPointInfo* info = find_info(setting.name);
  if (info == nullptr) {
    std::string names;
    for (const FailPointInfo& known : kTable) {
      names += (names.empty() ? "" : ", ") + std::string(known.name);
    }
    return item_error(item, "no fail point of that name (there are " + names + ")");
  }
  std::string_view value = item.substr(eq + 1);
  if (info->kind == Kind::kValue) {
    const std::optional<int64_t> number = parse_number<int64_t>(value);
    if (!number || *number < 0 || *number > kMaxValue) {
      return item_error(item, "expected a number from 0 to 1000000000");
    }
    setting.value = *number;
    return setting;
  }
  const size_t colon = value.find(':');
  if (colon != std::string_view::npos) {
    setting.marker = std::string(value.substr(colon + 1));
    value = value.substr(0, colon);
    if (!info->sees_text) return item_error(item, "this point has no text to match a marker");
    if (setting.marker.empty() || setting.marker.size() > kMaxMarkerBytes) {
      return item_error(item, "a marker has 1 to 256 bytes");
    }
  }
  const size_t at = value.find('@');
  if (at != std::string_view::npos) {
    const std::optional<uint64_t> n = parse_number<uint64_t>(value.substr(at + 1));
    if (!n || *n == 0 || *n > kMaxHit) return item_error(item, "@N counts hits from 1");
    setting.at_hit = *n;
    value = value.substr(0, at);
  }
  const std::optional<FailAction> action = action_from_name(value);
  if (!action) return item_error(item, "expected crash, abort, hang or alloc");
  setting.action = *action;
  return setting;
}

// Writes straight to stderr: the process is about to die, so nothing may be left in a buffer.
void announce(std::string_view name, FailAction action) {
  std::fprintf(stderr, "synapse: fail point %.*s: %.*s (%s)\n", static_cast<int>(name.size()),
               name.data(), static_cast<int>(fail_action_name(action).size()),
               fail_action_name(action).data(), std::string(kFailPointsEnv).c_str());
  std::fflush(stderr);
}

[[noreturn]] void allocate_until_killed() {
  constexpr size_t kChunkBytes = size_t{64} << 20;
  // Reachable, so that neither the optimizer nor a leak checker takes the memory back.
  static std::vector<void*> kept;
  for (;;) {
    void* chunk = std::malloc(kChunkBytes);
    if (chunk == nullptr) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    std::memset(chunk, 0xA5, kChunkBytes);  // touched: resident, not just reserved
    kept.push_back(chunk);
  }
}

struct ProcessFailPoints {
  Status status;
  std::unique_ptr<FailPoints> points;
};

ProcessFailPoints load_from_environment() {
  ProcessFailPoints loaded;
  // Read before main() runs, so no thread can be changing the environment.
  // NOLINTNEXTLINE(concurrency-mt-unsafe)
  if (std::getenv("SYNAPSE_FAIL_POINTS") != nullptr) {
    loaded.status = Status(ErrorCode::kInvalidArgument,
                           "SYNAPSE_FAIL_POINTS was renamed SYNAPSE_FAILPOINTS; set that instead");
  }
  const char* env =
      std::getenv(std::string(kFailPointsEnv).c_str());  // NOLINT(concurrency-mt-unsafe)
  Result<std::vector<FailPointSetting>> settings =
      parse_fail_points(env != nullptr ? env : std::string_view());
  if (loaded.status.ok() && !settings.ok()) loaded.status = settings.status();
  loaded.points = std::make_unique<FailPoints>(
      settings.ok() && loaded.status.ok() ? std::move(*settings) : std::vector<FailPointSetting>{});
  return loaded;
}

const ProcessFailPoints& process_fail_points() {
  static const ProcessFailPoints loaded = load_from_environment();
  return loaded;
}

// Reads the variable at start-up in every program that links fail points, and refuses a bad one
// there: a test relying on a misspelt point must not run as if the point were in place.
[[maybe_unused]] const bool kLoadedAtStartup = [] {
  const ProcessFailPoints& loaded = process_fail_points();
  if (!loaded.status.ok()) {
    std::fprintf(stderr, "synapse: %s\n", loaded.status.message().c_str());
    std::fflush(stderr);
    std::_Exit(2);
  }
  fail_point_internal::g_actions_armed.store(loaded.points->has_actions(),
                                             std::memory_order_relaxed);
  return true;
}();

}  // namespace

std::span<const FailPointInfo> fail_point_table() { return kTable; }

std::string_view fail_action_name(FailAction action) {
  for (const auto& [known, name] : kActions) {
    if (known == action) return name;
  }
  return "unknown";
}

Result<std::vector<FailPointSetting>> parse_fail_points(std::string_view text) {
  std::vector<FailPointSetting> settings;
  if (text.empty()) return settings;
  if (text.size() > kMaxTextBytes) {
    return Status(ErrorCode::kInvalidArgument,
                  std::string(kFailPointsEnv) + " is longer than 4096 bytes");
  }
  for (;;) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    SYN_ASSIGN_OR_RETURN(FailPointSetting setting, parse_item(item));
    for (const FailPointSetting& earlier : settings) {
      if (earlier.name == setting.name) return item_error(item, "the point is already set");
    }
    settings.push_back(std::move(setting));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return settings;
}

std::string fail_points_text(std::span<const FailPointSetting> settings) {
  std::string text;
  for (const FailPointSetting& s : settings) {
    if (!text.empty()) text += ',';
    text += s.name + "=";
    const FailPointInfo* info = find_info(s.name);
    if (info != nullptr && info->kind == Kind::kValue) {
      text += std::to_string(s.value);
      continue;
    }
    text += std::string(fail_action_name(s.action));
    if (s.at_hit != 1) text += "@" + std::to_string(s.at_hit);
    if (!s.marker.empty()) text += ":" + s.marker;
  }
  return text;
}

struct FailPoints::Point {
  FailPointSetting setting;
  bool action = false;
  std::atomic<uint64_t> hits{0};
};

FailPoints::FailPoints(std::vector<FailPointSetting> settings) {
  for (FailPointSetting& setting : settings) {
    auto point = std::make_unique<Point>();
    const FailPointInfo* info = find_info(setting.name);
    point->action = info != nullptr && info->kind == Kind::kAction;
    has_actions_ = has_actions_ || point->action;
    point->setting = std::move(setting);
    points_.push_back(std::move(point));
  }
}

FailPoints::~FailPoints() = default;

std::optional<FailAction> FailPoints::hit(std::string_view name, std::string_view text) {
  for (const std::unique_ptr<Point>& point : points_) {
    if (!point->action || point->setting.name != name) continue;
    if (!point->setting.marker.empty() && text.find(point->setting.marker) == std::string::npos) {
      return std::nullopt;
    }
    // fetch_add gives each hit its own number, so exactly one thread acts.
    if (point->hits.fetch_add(1, std::memory_order_relaxed) + 1 == point->setting.at_hit) {
      return point->setting.action;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

int64_t FailPoints::value(std::string_view name) const {
  for (const std::unique_ptr<Point>& point : points_) {
    if (!point->action && point->setting.name == name) return point->setting.value;
  }
  return 0;
}

void perform_fail_action(std::string_view name, FailAction action) {
  announce(name, action);
  switch (action) {
    case FailAction::kCrash:
      // As a wild pointer would: an installed handler (a crash reporter, a sanitizer) runs.
      std::raise(SIGSEGV);
      // A handler that returned: crash without it.
      std::signal(SIGSEGV, SIG_DFL);
      std::raise(SIGSEGV);
      break;
    case FailAction::kAbort:
      break;
    case FailAction::kHang:
      // Signals with handlers (SIGTERM's graceful shutdown) run and return here.
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    case FailAction::kAlloc:
      allocate_until_killed();
  }
  std::abort();
}

Status fail_points_status() { return process_fail_points().status; }

int64_t fail_point_value(std::string_view name) {
  return process_fail_points().points->value(name);
}

namespace fail_point_internal {

std::atomic<bool> g_actions_armed{false};

void hit(std::string_view name, std::string_view text) {
  if (std::optional<FailAction> action = process_fail_points().points->hit(name, text)) {
    perform_fail_action(name, *action);
  }
}

}  // namespace fail_point_internal
}  // namespace synapse
