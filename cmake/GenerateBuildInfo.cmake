# SPDX-License-Identifier: Apache-2.0
# Run at build time (cmake -P) so `synapse --version` names the commit actually built.
# Inputs: SOURCE_DIR, TEMPLATE, OUTPUT, VERSION, COMPILER, BUILD_TYPE, SANITIZERS.
execute_process(
  COMMAND git -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
  OUTPUT_VARIABLE SYNAPSE_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET RESULT_VARIABLE git_rc)
if(NOT git_rc EQUAL 0 OR SYNAPSE_GIT_COMMIT STREQUAL "")
  set(SYNAPSE_GIT_COMMIT "unknown")
endif()
execute_process(
  COMMAND git -C "${SOURCE_DIR}" status --porcelain --untracked-files=no
  OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT dirty STREQUAL "" AND NOT SYNAPSE_GIT_COMMIT STREQUAL "unknown")
  string(APPEND SYNAPSE_GIT_COMMIT "-dirty")
endif()
set(PROJECT_VERSION "${VERSION}")
set(SYNAPSE_COMPILER "${COMPILER}")
set(CMAKE_BUILD_TYPE "${BUILD_TYPE}")
set(SYNAPSE_SANITIZE "${SANITIZERS}")
# configure_file rewrites the output only when its content changes: no needless relinks.
configure_file("${TEMPLATE}" "${OUTPUT}" @ONLY)
