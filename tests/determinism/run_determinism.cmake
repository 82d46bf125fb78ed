# Determinism check: runs parasim several times and requires byte-identical results.
#
#   cmake -D PARASIM=<binary> -D WORK_DIR=<dir> -D ARGS="simulate|--taskgraph|g.json|--json"
#         [-D VARIANTS="--threads|1;--threads|2"] [-D RUNS=2] -P run_determinism.cmake
#         (VARIANTS may be joined by '^^' instead of ';')
#
# Every run gets the same output directory (@OUT@ in ARGS; moved aside afterwards, so paths
# printed in the output agree) and must exit 0. Its stdout and every file it wrote are compared
# byte for byte with the first run. ARGS is run RUNS times plainly and once per VARIANT (extra
# arguments appended; '|' separates arguments, ';' separates variants).
cmake_minimum_required(VERSION 3.25)

if(NOT RUNS)
  set(RUNS 2)
endif()
# Variants may also come joined by '^^' (how CMakeLists.txt passes several through add_test).
string(REPLACE "^^" ";" VARIANTS "${VARIANTS}")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(out_dir "${WORK_DIR}/out")

set(runs "")
foreach(i RANGE 1 ${RUNS})
  list(APPEND runs "plain-${i}")
endforeach()
set(variant_index 0)
foreach(v IN LISTS VARIANTS)
  math(EXPR variant_index "${variant_index} + 1")
  list(APPEND runs "variant-${variant_index}")
endforeach()

set(variant_index 0)
foreach(run IN LISTS runs)
  string(REPLACE "|" ";" argv "${ARGS}")
  if(run MATCHES "^variant-([0-9]+)$")
    math(EXPR idx "${CMAKE_MATCH_1} - 1")
    list(GET VARIANTS ${idx} extra)
    string(REPLACE "|" ";" extra "${extra}")
    list(APPEND argv ${extra})
  endif()
  string(REPLACE "@OUT@" "${out_dir}" argv "${argv}")
  file(MAKE_DIRECTORY "${out_dir}")
  execute_process(COMMAND "${PARASIM}" ${argv} RESULT_VARIABLE rc OUTPUT_FILE "${out_dir}/stdout"
                  ERROR_VARIABLE err TIMEOUT 600)
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "run ${run} failed (exit ${rc}): parasim ${argv}\n${err}")
  endif()
  file(RENAME "${out_dir}" "${WORK_DIR}/${run}")
endforeach()

# Compare every file of every run with the first run.
list(GET runs 0 first)
file(GLOB_RECURSE reference RELATIVE "${WORK_DIR}/${first}" "${WORK_DIR}/${first}/*")
list(SORT reference)
foreach(run IN LISTS runs)
  file(GLOB_RECURSE produced RELATIVE "${WORK_DIR}/${run}" "${WORK_DIR}/${run}/*")
  list(SORT produced)
  if(NOT produced STREQUAL reference)
    message(FATAL_ERROR "${run} wrote different files: [${produced}] vs [${reference}] in ${first}")
  endif()
  foreach(f IN LISTS reference)
    file(SHA256 "${WORK_DIR}/${first}/${f}" a)
    file(SHA256 "${WORK_DIR}/${run}/${f}" b)
    if(NOT a STREQUAL b)
      message(FATAL_ERROR "${f} differs between ${first} and ${run} (see ${WORK_DIR})\n"
                          "${first}: ${WORK_DIR}/${first}/${f}\n${run}: ${WORK_DIR}/${run}/${f}")
    endif()
  endforeach()
endforeach()
list(LENGTH reference nfiles)
list(LENGTH runs nruns)
file(SIZE "${WORK_DIR}/${first}/stdout" stdout_size)
if(stdout_size EQUAL 0)
  message(FATAL_ERROR "the command printed nothing; a determinism test needs output to compare")
endif()
message(STATUS "identical across ${nruns} runs: ${nfiles} file(s) incl. stdout (${stdout_size} bytes)")
