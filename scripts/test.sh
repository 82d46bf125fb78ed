#!/usr/bin/env bash
# Sets up, builds (warnings are errors) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh -DPARASIM_WERROR=ON
ctest --test-dir build --output-on-failure -j"$(nproc 2>/dev/null || echo 2)"
