# SPDX-License-Identifier: Apache-2.0
# Warnings and sanitizers shared by every target. Shipped binaries target baseline x86-64: SIMD is
# chosen at run time, so no -march=native here; per-ISA kernel files add their own flags.
add_library(synapse_compile_options INTERFACE)
target_compile_options(synapse_compile_options INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wunused -Woverloaded-virtual -Wconversion -Wsign-conversion
  -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough
  # Not -Wnull-dereference: GCC 12 reports false positives inside libstdc++ at -O2.
  # Designated initializers deliberately leave the other members at their defaults.
  -Wno-missing-field-initializers
  # Floating-point results are part of the contract (kernels are compared with references
  # within derived bounds, quantizers reproduce llama.cpp's bytes): the compiler must not fuse
  # a multiply and an add on its own. GCC does so in C++ even with -std=c++20 once FMA is
  # enabled (the ISA kernel files); kernels that want FMA use the intrinsic.
  -ffp-contract=off)
# The number-crunching libraries (kernels, quantizers, sampling) compile at -O2 even in Debug:
# every model-running process self-checks all kernels at start, and at -O0 under the sanitizers
# that alone took 1.1 s per process (the e2e tests start hundreds), and synthesizing a K-quant
# model for a test took seconds. The sanitizers still instrument them; -ffp-contract=off keeps
# their results those of -O0.
add_library(synapse_hot_code_options INTERFACE)
target_compile_options(synapse_hot_code_options INTERFACE $<$<CONFIG:Debug>:-O2>)

if(SYNAPSE_WERROR)
  target_compile_options(synapse_compile_options INTERFACE -Werror)
endif()

if(SYNAPSE_SANITIZE)
  string(REPLACE ";" "," _synapse_sanitizers "${SYNAPSE_SANITIZE}")
  add_compile_options(-fsanitize=${_synapse_sanitizers} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_synapse_sanitizers})
  if("address" IN_LIST SYNAPSE_SANITIZE)
    # Executables link without PIE here: the instrumented Debug binary carries ~6 million relative
    # relocations (150 MB of RELA, mostly the sanitizers' per-check records) that a PIE start
    # applies and dirties on every launch — 0.8 s per `synapse` process against 0.4 s without,
    # and the e2e tests start hundreds. ASan and UBSan do not need PIE; TSan's layout does.
    add_link_options($<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-no-pie>)
  endif()
endif()

if(SYNAPSE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "SYNAPSE_FUZZ needs clang (libFuzzer); use the 'fuzz' preset")
  endif()
  # Every object is instrumented for coverage; only the fuzz executables link libFuzzer's main.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
