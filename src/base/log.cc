// SPDX-License-Identifier: Apache-2.0
#include "base/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace synapse {
namespace {

LogLevel level_from_env() {
  const char* value = std::getenv("SYNAPSE_LOG_LEVEL");
  if (value == nullptr) return LogLevel::kInfo;
  if (std::strcmp(value, "debug") == 0) return LogLevel::kDebug;
  if (std::strcmp(value, "warn") == 0) return LogLevel::kWarn;
  if (std::strcmp(value, "error") == 0) return LogLevel::kError;
  if (std::strcmp(value, "off") == 0) return LogLevel::kOff;
  return LogLevel::kInfo;
}

std::atomic<LogLevel>& current_level() {
  static std::atomic<LogLevel> level{level_from_env()};
  return level;
}

spdlog::logger& logger() {
  // stderr only: stdout carries command output (generated text, JSON).
  static const std::shared_ptr<spdlog::logger> instance = [] {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto created = std::make_shared<spdlog::logger>("synapse", sink);
    created->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
    created->set_level(spdlog::level::trace);  // filtering happens in log_at
    return created;
  }();
  return *instance;
}

}  // namespace

void set_log_level(LogLevel level) { current_level().store(level, std::memory_order_relaxed); }
LogLevel log_level() { return current_level().load(std::memory_order_relaxed); }

void log_message(LogLevel level, std::string_view message) {
  switch (level) {
    case LogLevel::kDebug:
      logger().debug("{}", message);
      break;
    case LogLevel::kInfo:
      logger().info("{}", message);
      break;
    case LogLevel::kWarn:
      logger().warn("{}", message);
      break;
    case LogLevel::kError:
      logger().error("{}", message);
      break;
    case LogLevel::kOff:
      break;
  }
}

}  // namespace synapse
