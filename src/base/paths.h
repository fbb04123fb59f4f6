// SPDX-License-Identifier: Apache-2.0
// Where Synapse keeps durable state (model store, job database): $SYNAPSE_HOME, else
// $XDG_DATA_HOME/synapse, else $HOME/.local/share/synapse.
#pragma once

#include <string>

#include "base/status.h"

namespace synapse {

// The state directory's path; it is not created.
Result<std::string> state_directory();
// The job database shared by `synapse serve` and `synapse jobs`: <state directory>/jobs.db.
Result<std::string> jobs_database_path();
// Creates `path` and missing parents (mode 0755); succeeds if it already exists as a directory.
Status create_directories(const std::string& path);

}  // namespace synapse
