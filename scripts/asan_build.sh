#!/usr/bin/env bash
# Configures and builds the sanitizer tree, build-asan, shared by scripts/sanitize.sh (the whole
# test suite) and scripts/fuzz.sh (the libFuzzer targets): clang with ASan + UBSan, libFuzzer's
# coverage instrumentation on every library, RelWithDebInfo at -O1 -g1 (line tables only), no CUDA,
# no benchmarks, and without the CLI cases that take a minute or more there and test no code path the
# Release suite does not (PARASIM_SLOW_CLI_CASES). One tree for both halves compiles the libraries once instead of twice, which is
# most of CI's time on two cores. The CPU kernels link OpenMP (kernels/CMakeLists.txt), which under
# clang is LLVM's libomp: libomp-dev, installed by scripts/setup.sh.
#
#   scripts/asan_build.sh                    configure, build everything
#   scripts/asan_build.sh fuzz_model ...     configure, build these targets only
#
# Environment: ASAN_BUILD_DIR (default build-asan).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ASAN_BUILD_DIR:-build-asan}
jobs=$(nproc 2>/dev/null || echo 2)
command -v clang++ >/dev/null || { echo "asan_build.sh: clang++ not found (scripts/setup.sh installs it)" >&2; exit 1; }

# A tree configured with another compiler (the gcc sanitizer tree of earlier versions) is started over.
if [ -f "$build/CMakeCache.txt" ] && ! grep -q '^CMAKE_CXX_COMPILER:FILEPATH=.*clang++' "$build/CMakeCache.txt"; then
  echo "asan_build.sh: $build was configured with another compiler; starting it over"
  rm -rf "$build"
fi
CXX=clang++ CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DPARASIM_FUZZ=ON -DPARASIM_CUDA=OFF -DPARASIM_BUILD_BENCH=OFF -DPARASIM_SLOW_CLI_CASES=OFF >/dev/null
if [ $# -gt 0 ]; then
  cmake --build "$build" -j"$jobs" --target "$@"
else
  cmake --build "$build" -j"$jobs"
fi
