# SPDX-License-Identifier: Apache-2.0
# Records the git commit and compiler for `synapse --version`. The commit is read at configure time;
# a build outside a git checkout reports "unknown".
execute_process(
  COMMAND git -C "${CMAKE_CURRENT_SOURCE_DIR}" rev-parse --short=12 HEAD
  OUTPUT_VARIABLE SYNAPSE_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET RESULT_VARIABLE _synapse_git_rc)
if(NOT _synapse_git_rc EQUAL 0 OR SYNAPSE_GIT_COMMIT STREQUAL "")
  set(SYNAPSE_GIT_COMMIT "unknown")
endif()
set(SYNAPSE_COMPILER "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}")
