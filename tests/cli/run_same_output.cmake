# Two `parasim` runs that must print the same bytes on stdout, both exiting 0 (a zoo model and
# the Hugging Face config.json of the same model, for instance).
#
#   cmake -D PARASIM=<binary> -D ARGS_A="plan|--model|x" -D ARGS_B="plan|--model|y.json" -P run_same_output.cmake
cmake_minimum_required(VERSION 3.25)

set(outs "")
foreach(which IN ITEMS A B)
  string(REPLACE "|" ";" argv "${ARGS_${which}}")
  execute_process(COMMAND "${PARASIM}" ${argv} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 300)
  if(NOT "${result}" STREQUAL "0")
    message(FATAL_ERROR "parasim ${argv}: exit ${result}\nstderr:\n${err}")
  endif()
  if("${out}" STREQUAL "")
    message(FATAL_ERROR "parasim ${argv}: printed nothing")
  endif()
  set(out_${which} "${out}")
endforeach()
if(NOT "${out_A}" STREQUAL "${out_B}")
  message(FATAL_ERROR "outputs differ\n--- ${ARGS_A}:\n${out_A}\n--- ${ARGS_B}:\n${out_B}")
endif()
string(LENGTH "${out_A}" n)
message(STATUS "ok: ${n} identical bytes")
