// SPDX-License-Identifier: Apache-2.0
#include "base/paths.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace synapse {

Result<std::string> state_directory() {
  if (const char* home = std::getenv("SYNAPSE_HOME"); home != nullptr && *home != '\0') {
    return std::string(home);
  }
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/synapse";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.local/share/synapse";
  }
  return Status(ErrorCode::kNotFound,
                "no state directory: set SYNAPSE_HOME (or XDG_DATA_HOME or HOME)");
}

Result<std::string> jobs_database_path() {
  SYN_ASSIGN_OR_RETURN(std::string directory, state_directory());
  return directory + "/jobs.db";
}

Status create_directories(const std::string& path) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) {
    return Status(ErrorCode::kIoError, "cannot create directory: " + error.message(),
                  ErrorWhere{.path = path});
  }
  if (!std::filesystem::is_directory(path, error)) {
    return Status(ErrorCode::kIoError, "exists but is not a directory", ErrorWhere{.path = path});
  }
  return ok_status();
}

}  // namespace synapse
