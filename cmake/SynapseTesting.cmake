# SPDX-License-Identifier: Apache-2.0
# synapse_add_test(NAME name SOURCES ... LIBS ... LABELS unit|golden|e2e|slow|threads|gpu [ARGS ...])
# One GoogleTest executable, registered with CTest as one test carrying the given labels.
include(CTest)

function(synapse_add_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} synapse_test_support GTest::gtest
                                          GTest::gtest_main synapse_compile_options)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME} --gtest_color=no ${T_ARGS})
  # Commands that run a GGUF prepare it into the model store first: tests get their own state
  # directory in the build tree rather than the user's (a test may still set its own).
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}"
                       ENVIRONMENT "SYNAPSE_HOME=${CMAKE_BINARY_DIR}/test-home")
endfunction()
