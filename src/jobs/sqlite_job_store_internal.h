// SPDX-License-Identifier: Apache-2.0
// Shared by the two halves of SqliteJobStore (sqlite_job_store.cc, sqlite_job_store_read.cc).
#pragma once

#include <string>
#include <string_view>

#include "base/echo.h"
#include "base/status.h"

namespace synapse::jobs {

inline Status job_not_found(std::string_view job_id) {
  return Status(ErrorCode::kJobNotFound, "no job '" + clip_for_echo(job_id) + "'",
                ErrorWhere{.field = "job_id"});
}

}  // namespace synapse::jobs
