#!/usr/bin/env bash
# Sets up, builds and runs parasim's main job: the model zoo, then one simulated training step of
# ResNet-50 under 8-way data parallelism on a DGX-1 (V100) with its Perfetto-readable timeline.
# (The projection across GPU counts with an HTML report becomes the main job once `parasim project`
# and `parasim report --model` land.)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh >/dev/null
mkdir -p out
./build/bin/parasim models
./build/bin/parasim simulate --model resnet50 --cluster dgx1-v100 --batch 256 --strategy dp=8 \
  --trace out/resnet50-dp8-dgx1.trace.json
echo "timeline: out/resnet50-dp8-dgx1.trace.json (open in https://ui.perfetto.dev or chrome://tracing)"
