#!/usr/bin/env bash
# Builds the whole project with AddressSanitizer + UndefinedBehaviorSanitizer in build-asan
# (scripts/asan_build.sh: clang, RelWithDebInfo at -O1 -g1, no CUDA, no benchmarks; the same tree
# builds the fuzzers) and runs the whole test suite there.
# Any sanitizer report fails its test: UBSan halts on the first error, ASan checks for leaks.
#
#   scripts/sanitize.sh              build and run every test
#   scripts/sanitize.sh -R fuzz      extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ASAN_BUILD_DIR:-build-asan}
jobs=$(nproc 2>/dev/null || echo 2)

ASAN_BUILD_DIR=$build bash scripts/asan_build.sh

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$build" --output-on-failure -j"$jobs" "$@"
