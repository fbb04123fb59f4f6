# SPDX-License-Identifier: Apache-2.0
# synapse_add_build_info(TARGET): generates build_info.cc (version, git commit, compiler, build
# type, sanitizers) at every build, so the commit is never stale, and adds it to TARGET.
set(SYNAPSE_COMPILER "${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}")

function(synapse_add_build_info target template)
  set(output "${CMAKE_CURRENT_BINARY_DIR}/build_info.cc")
  string(REPLACE ";" "," sanitizers "${SYNAPSE_SANITIZE}")  # a list would split the argument
  add_custom_target(${target}_build_info
    COMMAND ${CMAKE_COMMAND}
      -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DTEMPLATE=${template} -DOUTPUT=${output}
      -DVERSION=${PROJECT_VERSION} "-DCOMPILER=${SYNAPSE_COMPILER}"
      -DBUILD_TYPE=${CMAKE_BUILD_TYPE} "-DSANITIZERS=${sanitizers}"
      -P ${PROJECT_SOURCE_DIR}/cmake/GenerateBuildInfo.cmake
    BYPRODUCTS ${output}
    COMMENT "Recording build info"
    VERBATIM)
  target_sources(${target} PRIVATE ${output})
  add_dependencies(${target} ${target}_build_info)
endfunction()
