#!/usr/bin/env bash
# Regenerates the checked-in reproductions under reproductions/ (each folder's README says what it is):
#
#   bash scripts/reproduce.sh pal2019      Pal et al. 2019: DP vs hybrid DP x MP, 8-1,024 V100s
#   bash scripts/reproduce.sh spectrain    SpecTrain (Chen et al. 2018): pipelines vs DP on 4 PCIe GPUs
#   bash scripts/reproduce.sh hetero-dp    GoogLeNet/CIFAR-10 DP on 2x TITAN X + 1x GTX 1080
#   bash scripts/reproduce.sh all
#
# Sets up and builds like scripts/run.sh unless PARASIM names a parasim binary to use. Output is
# deterministic: a second run rewrites the same bytes (git diff shows nothing).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -eq 0 ]; then
  echo "usage: bash scripts/reproduce.sh pal2019|spectrain|hetero-dp|all ..." >&2
  exit 2
fi
for what in "$@"; do
  case "$what" in
    pal2019 | spectrain | hetero-dp | all) ;;
    *) echo "reproduce.sh: unknown reproduction \"$what\"; expected pal2019, spectrain, hetero-dp or all" >&2; exit 2 ;;
  esac
done

if [ -z "${PARASIM:-}" ]; then
  bash scripts/setup.sh
  bash scripts/build.sh >/dev/null
  PARASIM=./build/bin/parasim
fi
P="$PARASIM"


scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Drops generated report files from an earlier run (inputs such as *.cluster.json and the
# README stay), so a plot that is no longer drawn does not linger.
clean_report() {
  local dir=$1
  mkdir -p "$dir"
  rm -f "$dir"/*.csv "$dir"/*.gp "$dir"/*.png "$dir"/*.svg "$dir"/index.html "$dir"/summary.md "$dir"/results.json
}

# ------------------------------------------------------------------ Pal et al. 2019
# The flags of docs/pal2019.md: the schedules of 2019 (plain model parallelism, GPipe and
# synchronous 1F1B; no interleaving, which is Narayanan et al. 2021), no ZeRO, no recomputation.
# A second, labelled comparison adds the interleaved schedule (reproductions/pal2019/interleaved/).
pal2019() {
  pal2019_runs reproductions/pal2019 none,gpipe,1f1b "Pal et al. 2019 setting" \
    "inception_v3 momentum 0 Inception-V3" \
    "inception_v3 momentum 64 Inception-V3" \
    "gnmt adam 0 GNMT" \
    "biglstm momentum 0 BigLSTM"
  pal2019_runs reproductions/pal2019/interleaved none,gpipe,1f1b,interleaved "2019 setting plus the 2021 interleaved schedule" \
    "inception_v3 momentum 0 Inception-V3" \
    "gnmt adam 0 GNMT" \
    "biglstm momentum 0 BigLSTM"
}

pal2019_runs() {  # root schedules title-suffix "model optimizer per-device-batch name"...
  local root=$1 schedules=$2 suffix=$3
  shift 3
  local flags=(--cluster dgx1-v100 --gpus 8-1024 --schedules "$schedules" --zero 0 --recompute none --no-timeline)
  local runs=("$@")
  mkdir -p "$root"
  local gains=$root/gains.csv
  echo "model,per_device_batch,gpus,dp_time_to_train_s,hybrid_time_to_train_s,gain_pct,paper_gain_at_scale_pct,dp_strategy,hybrid_strategy" \
    > "$scratch/gains.csv"
  for run in "${runs[@]}"; do
    read -r model optimizer batch name <<<"$run"
    local dir=$root/$model extra=() paper
    if [ "$batch" != 0 ]; then dir=${dir}_b$batch; extra=(--per-device-batch "$batch"); fi
    case $model in inception_v3) paper=26.5 ;; gnmt) paper=8 ;; biglstm) paper=22 ;; esac
    clean_report "$dir"
    echo "pal2019: $name -> $dir" >&2
    "$P" report --model "$model" --optimizer "$optimizer" "${flags[@]}" "${extra[@]}" -o "$dir" \
      --title "$name on dgx1-v100, DP vs hybrid DP x MP ($suffix)" >/dev/null
    # DP only (series 0) against the best hybrid (series 1) per GPU count, from the report's
    # scaling.csv: series_index,gpus,time_to_train_s,step_time_ms,global_batch,epochs,speedup,series,strategy
    local pdb
    pdb=$(awk -F, 'NR == 2 { print $5 / ($2 == 0 ? 1 : $2); exit }' "$dir/scaling.csv")
    awk -F, -v model="$model" -v pdb="$pdb" -v paper="$paper" '
      NR == 1 { next }
      {
        strategy = $9; for (i = 10; i <= NF; ++i) strategy = strategy "," $i
        gsub(/"/, "", strategy)
        if ($1 == 0) { dp[$2] = $3; dps[$2] = strategy } else if ($1 == 1) { hy[$2] = $3; hys[$2] = strategy }
        if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 }
      }
      END {
        for (k = 1; k <= n; ++k) {
          g = order[k]
          if (!(g in dp) || !(g in hy)) continue
          printf "%s,%s,%s,%s,%s,%.1f,%s,\"%s\",\"%s\"\n", model, pdb, g, dp[g], hy[g], (dp[g] - hy[g]) / dp[g] * 100, paper, dps[g], hys[g]
        }
      }' "$dir/scaling.csv" >> "$scratch/gains.csv"
  done
  mv "$scratch/gains.csv" "$gains"
}

# ------------------------------------------------------------------ SpecTrain (Chen et al. 2018)
# One simulated step per schedule on a 4-GPU PCIe workstation (pcie-4gpu.cluster.json), global
# batch 128, momentum SGD; DP first, so every speed-up in the report is over DP.
spectrain() {
  local root=reproductions/spectrain
  local cluster=$root/pcie-4gpu.cluster.json
  local strategies=(dp=4 dp=1 mp=4 "mp=4,schedule=gpipe,micro=8" "mp=4,schedule=1f1b,micro=8"
                    "mp=4,schedule=pipedream" "mp=4,schedule=spectrain")
  for model in vgg16_cifar googlenet_cifar; do
    local dir=$root/$model inputs=() i=0
    clean_report "$dir"
    rm -rf "$dir/runs"
    mkdir -p "$dir/runs"
    echo "spectrain: $model -> $dir" >&2
    for s in "${strategies[@]}"; do
      i=$((i + 1))
      local file
      file=$dir/runs/$i-$(echo "$s" | tr ',=' '_-').json
      "$P" simulate --model "$model" --cluster "$cluster" --batch 128 --optimizer momentum --strategy "$s" --json > "$file"
      inputs+=(--from "$file")
    done
    # The Gantt chart of SpecTrain's step, for VGG-16 only: GoogLeNet's 2,000 bars would add
    # a megabyte to the checked-in files.
    if [ "$model" = vgg16_cifar ]; then
      "$P" simulate --model "$model" --cluster "$cluster" --batch 128 --optimizer momentum \
        --strategy mp=4,schedule=spectrain --trace "$scratch/spectrain.trace.json" >/dev/null
      inputs+=(--from "$scratch/spectrain.trace.json")
    fi
    "$P" report "${inputs[@]}" -o "$dir" \
      --title "$model, batch 128: pipelined schedules vs DP on 4x GTX 1080 Ti (PCIe 3.0, no P2P)" >/dev/null
  done
}

# ------------------------------------------------------------------ heterogeneous DP
# GoogLeNet/CIFAR-10 on pcie-hetero (2x TITAN X Pascal + 1x GTX 1080, PCIe 3.0 through the
# host): one TITAN X (dp=1 uses device 0), both TITAN X, and all three with an even and a
# speed-proportional split. split=even splits 128 like torch.nn.DataParallel: 43/43/42.
hetero_dp() {
  local dir=reproductions/hetero-dp inputs=() i=0
  clean_report "$dir"
  rm -rf "$dir/runs"
  mkdir -p "$dir/runs"
  echo "hetero-dp: googlenet_cifar -> $dir" >&2
  for run in "dp=1 128" "dp=2 128" "dp=3,split=even 128" "dp=3,split=speed 128"; do
    read -r s batch <<<"$run"
    i=$((i + 1))
    local file
    file=$dir/runs/$i-$(echo "$s" | tr ',=' '_-')-b$batch.json
    "$P" simulate --model googlenet_cifar --cluster pcie-hetero --batch "$batch" --optimizer momentum --strategy "$s" \
      --json > "$file"
    inputs+=(--from "$file")
  done
  "$P" report "${inputs[@]}" -o "$dir" \
    --title "GoogLeNet/CIFAR-10, batch 128: 1x TITAN X vs 2x TITAN X + 1x GTX 1080" >/dev/null
}

for what in "$@"; do
  case "$what" in
    pal2019) pal2019 ;;
    spectrain) spectrain ;;
    hetero-dp) hetero_dp ;;
    all) pal2019; spectrain; hetero_dp ;;
  esac
done
echo "done; open reproductions/<name>/**/index.html" >&2
