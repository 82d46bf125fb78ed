#!/usr/bin/env bash
# Builds the whole project with AddressSanitizer + UndefinedBehaviorSanitizer in build-asan
# (RelWithDebInfo at -O1 -g1 -- line tables only, which keeps the build quick on 2 cores -- with no
# CUDA and no benchmarks) and runs the whole test suite there.
# Any sanitizer report fails its test: UBSan halts on the first error, ASan checks for leaks.
#
#   scripts/sanitize.sh              build and run every test
#   scripts/sanitize.sh -R fuzz      extra arguments go to ctest
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ASAN_BUILD_DIR:-build-asan}
jobs=$(nproc 2>/dev/null || echo 2)

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" -DPARASIM_SANITIZE=ON -DPARASIM_CUDA=OFF -DPARASIM_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j"$jobs"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$build" --output-on-failure -j"$jobs" "$@"
