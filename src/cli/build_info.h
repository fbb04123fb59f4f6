// SPDX-License-Identifier: Apache-2.0
// What was built: version, git commit, compiler, build type, sanitizers.
#pragma once

#include <string_view>

namespace synapse {

struct BuildInfo {
  std::string_view version;
  std::string_view git_commit;
  std::string_view compiler;
  std::string_view build_type;
  std::string_view sanitizers;
};

const BuildInfo& build_info();

}  // namespace synapse
