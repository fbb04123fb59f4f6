# SPDX-License-Identifier: Apache-2.0
# cmake -DNM=nm -DOBJECTS="a.o;b.o" -P check_isa_symbols.cmake
# Fails when an object file defines a weak symbol (nm types W, V, u, i): an inline function or
# template instantiated in an ISA translation unit, which the linker may pick for all callers.
set(bad "")
foreach(object IN LISTS OBJECTS)
  execute_process(COMMAND ${NM} -C --defined-only ${object}
                  OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm failed on ${object}")
  endif()
  string(REPLACE "\n" ";" lines "${symbols}")
  foreach(line IN LISTS lines)
    # DW.ref.__gxx_personality_v0 is data, not code: the unwinder's pointer to the C++ personality
    # routine, the same in every object (optimized builds emit it weak for exception tables).
    if(line MATCHES "^[0-9a-f]+ [WVui] (.*)$" AND NOT CMAKE_MATCH_1 STREQUAL "DW.ref.__gxx_personality_v0")
      list(APPEND bad "${object}: ${CMAKE_MATCH_1}")
    endif()
  endforeach()
endforeach()
if(bad)
  string(REPLACE ";" "\n  " report "${bad}")
  message(FATAL_ERROR "weak symbols in ISA translation units:\n  ${report}")
endif()
list(LENGTH OBJECTS count)
message(STATUS "${count} ISA objects, no weak symbols")
