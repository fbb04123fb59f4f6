// SPDX-License-Identifier: Apache-2.0
// Logging to stderr through spdlog, with fmt-style formatting. The level comes from
// SYNAPSE_LOG_LEVEL (debug, info, warn, error, off; default info) or set_log_level().
#pragma once

#include <fmt/format.h>

#include <string_view>
#include <utility>

namespace synapse {

enum class LogLevel { kDebug, kInfo, kWarn, kError, kOff };

void set_log_level(LogLevel level);
LogLevel log_level();
void log_message(LogLevel level, std::string_view message);

template <typename... Args>
void log_at(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (level < log_level()) return;
  log_message(level, fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
void log_debug(fmt::format_string<Args...> format, Args&&... args) {
  log_at(LogLevel::kDebug, format, std::forward<Args>(args)...);
}
template <typename... Args>
void log_info(fmt::format_string<Args...> format, Args&&... args) {
  log_at(LogLevel::kInfo, format, std::forward<Args>(args)...);
}
template <typename... Args>
void log_warn(fmt::format_string<Args...> format, Args&&... args) {
  log_at(LogLevel::kWarn, format, std::forward<Args>(args)...);
}
template <typename... Args>
void log_error(fmt::format_string<Args...> format, Args&&... args) {
  log_at(LogLevel::kError, format, std::forward<Args>(args)...);
}

}  // namespace synapse
