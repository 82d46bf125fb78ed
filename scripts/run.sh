#!/usr/bin/env bash
# Sets up, builds and runs parasim's main job: a projection of Inception-V3's time to train on
# 8 to 1,024 V100 GPUs (DGX-1 nodes), data parallelism against the best hybrid of data and model
# parallelism (Pal et al. 2019's setting: the schedules of 2019 - plain model parallelism, GPipe and
# synchronous 1F1B, no interleaving - no ZeRO, no recomputation),
# written as a report: index.html with inline plots, summary.md, CSV data and gnuplot scripts.
# The build takes about 6 minutes on two cores, the report about a second; progress bars show on a
# terminal.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh >/dev/null
mkdir -p out
./build/bin/parasim report --model inception_v3 --cluster dgx1-v100 --gpus 8-1024 --optimizer momentum \
  --schedules none,gpipe,1f1b --zero 0 --recompute none -o out/report >/dev/null
echo
sed -n '/^\*\*DP only against the best hybrid\*\*/,/^_gain/p' out/report/summary.md
echo
echo "report: out/report/index.html (open it in a browser; summary.md has the same tables)"
