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
if(SYNAPSE_WERROR)
  target_compile_options(synapse_compile_options INTERFACE -Werror)
endif()

if(SYNAPSE_SANITIZE)
  string(REPLACE ";" "," _synapse_sanitizers "${SYNAPSE_SANITIZE}")
  add_compile_options(-fsanitize=${_synapse_sanitizers} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_synapse_sanitizers})
endif()

if(SYNAPSE_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "SYNAPSE_FUZZ needs clang (libFuzzer); use the 'fuzz' preset")
  endif()
  # Every object is instrumented for coverage; only the fuzz executables link libFuzzer's main.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
