# One CLI-level test: runs the built `parasim` with ARGS and checks the exit code and stderr.
#
#   cmake -D PARASIM=<binary> -D ARGS="models|show|nosuchmodel" -D EXPECT_EXIT=2
#         -D EXPECT_STDERR=<regex> [-D WORK_DIR=<dir>] [-D EXPECT_NO_FILES_UNDER=<dir>]
#         [-D EXPECT_FILE=<path> -D EXPECT_FILE_REGEX=<regex>]
#         -P run_cli_case.cmake
#
# ARGS separates arguments with '|' (CMake lists cannot survive add_test quoting). A crash shows
# up as a non-numeric result ("Segmentation fault", "Child aborted") and fails the exit check.
# EXPECT_NO_FILES_UNDER checks that a failed run left nothing behind (no half-written outputs,
# no temporary files).
cmake_minimum_required(VERSION 3.25)

string(REPLACE "|" ";" argv "${ARGS}")
if(WORK_DIR)
  file(REMOVE_RECURSE "${WORK_DIR}")
  file(MAKE_DIRECTORY "${WORK_DIR}")
  string(REPLACE "@WORK@" "${WORK_DIR}" argv "${argv}")
endif()

set(launcher "")
if(SET_ENV)
  set(launcher ${CMAKE_COMMAND} -E env "${SET_ENV}")
endif()
# Just under the test's own 180 s (tests/cli/CMakeLists.txt), so a slow run under the sanitizers
# fails with its output shown rather than being killed by ctest.
execute_process(COMMAND ${launcher} "${PARASIM}" ${argv}
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 170)

set(shown "command: parasim ${argv}\nexit: ${result}\nstdout:\n${out}\nstderr:\n${err}")
if(NOT "${result}" STREQUAL "${EXPECT_EXIT}")
  message(FATAL_ERROR "expected exit code ${EXPECT_EXIT}, got ${result}\n${shown}")
endif()
if(DEFINED EXPECT_STDERR AND NOT err MATCHES "${EXPECT_STDERR}")
  message(FATAL_ERROR "stderr does not match /${EXPECT_STDERR}/\n${shown}")
endif()
if(NOT "${EXPECT_EXIT}" STREQUAL "0" AND "${err}" STREQUAL "")
  message(FATAL_ERROR "a failing run must explain itself on stderr\n${shown}")
endif()
foreach(bad IN ITEMS "terminate called" "Aborted" "AddressSanitizer" "runtime error:" "Segmentation")
  if(err MATCHES "${bad}")
    message(FATAL_ERROR "stderr shows a crash or sanitizer report (${bad})\n${shown}")
  endif()
endforeach()
if(EXPECT_NO_FILES_UNDER)
  file(GLOB_RECURSE left LIST_DIRECTORIES false "${EXPECT_NO_FILES_UNDER}/*")
  if(left)
    message(FATAL_ERROR "a failed run left files behind: ${left}\n${shown}")
  endif()
endif()
if(EXPECT_FILE)
  string(REPLACE "@WORK@" "${WORK_DIR}" EXPECT_FILE "${EXPECT_FILE}")
  if(NOT EXISTS "${EXPECT_FILE}")
    message(FATAL_ERROR "the run did not write ${EXPECT_FILE}\n${shown}")
  endif()
  file(READ "${EXPECT_FILE}" written)
  if(NOT written MATCHES "${EXPECT_FILE_REGEX}")
    message(FATAL_ERROR "${EXPECT_FILE} does not match /${EXPECT_FILE_REGEX}/:\n${written}\n${shown}")
  endif()
endif()
message(STATUS "ok: exit ${result}: ${err}")
