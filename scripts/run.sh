#!/usr/bin/env bash
# Sets up, builds and runs parasim's main job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh >/dev/null
./build/bin/parasim models
./build/bin/parasim models show resnet50 --batch 32
