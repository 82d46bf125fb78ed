#!/usr/bin/env bash
# The engine benchmark of this checkout against the one of an older commit, on this machine, in
# alternating rounds (a VM's speed drifts by tens of percent over hours, so two numbers measured
# apart do not compare; numbers measured in turns do):
#
#   scripts/bench_against.sh REV [ROUNDS] [FILTER]
#
# Builds bench/engine_bench.cpp at REV in a temporary worktree (Release, into a temporary build
# folder), then runs it and build/bin/parasim_engine_bench (scripts/build.sh first) by turns,
# ROUNDS times (default 12), with the Google Benchmark FILTER (default: the mixed DAG of 10^5 and
# 10^6 tasks on both presets and the compute chains). Prints, per benchmark, the CPU times of REV
# and of this checkout (min and median over the rounds) and REV's time over this checkout's: the
# speed-up of this engine over REV's on the same host. REV's benchmark must define the same names.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || [ $# -gt 3 ]; then
  echo "usage: scripts/bench_against.sh REV [ROUNDS] [FILTER]" >&2
  exit 2
fi
rev=$1
rounds=${2:-12}
filter=${3:-'Engine/(expanded/dgx1-v100/(100000|1000000)$|expanded/dgx-h100|compute-chains/)'}
case "$rounds" in '' | *[!0-9]* | 0)
  echo "bench_against.sh: ROUNDS must be a positive integer, got \"$rounds\"" >&2
  exit 2
  ;;
esac
commit=$(git rev-parse --verify --quiet "$rev^{commit}") || {
  echo "bench_against.sh: \"$rev\" is not a commit of this repository" >&2
  exit 2
}
head_bench=build/bin/parasim_engine_bench
if [ ! -x "$head_bench" ]; then
  echo "bench_against.sh: $head_bench is missing; run scripts/build.sh first" >&2
  exit 2
fi
if ! "$head_bench" --benchmark_list_tests --benchmark_filter="$filter" 2>/dev/null | grep -q .; then
  echo "bench_against.sh: no benchmark of $head_bench matches \"$filter\"" >&2
  exit 2
fi

work=$(mktemp -d)
cleanup() {
  git worktree remove --force "$work/src" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
if ! git worktree add --detach "$work/src" "$commit" >"$work/worktree.log" 2>&1; then
  echo "bench_against.sh: cannot check out ${commit:0:7} in $work/src: $(tail -1 "$work/worktree.log")" >&2
  exit 1
fi
echo "building parasim_engine_bench at ${commit:0:7} in $work ..." >&2
if ! { cmake -S "$work/src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release &&
  cmake --build "$work/build" --target parasim_engine_bench -j"$(nproc 2>/dev/null || echo 2)"; } \
  >"$work/build.log" 2>&1; then
  echo "bench_against.sh: building ${commit:0:7} failed; its log:" >&2
  tail -20 "$work/build.log" >&2
  exit 1
fi
old_bench=$work/build/bin/parasim_engine_bench

# One line per benchmark and round: "<side> <name> <CPU ms>" (the console prints name, time, unit,
# CPU time, unit).
run_side() {
  "$2" --benchmark_filter="$filter" 2>/dev/null |
    awk -v side="$1" '$3 ~ /^(ns|us|ms|s)$/ && $5 ~ /^(ns|us|ms|s)$/ {
      t = $4; if ($5 == "us") t /= 1000; else if ($5 == "s") t *= 1000; else if ($5 == "ns") t /= 1e6
      print side, $1, t }'
}
for ((i = 1; i <= rounds; i++)); do
  echo "round $i of $rounds" >&2
  run_side old "$old_bench"
  run_side new "$head_bench"
done >"$work/times.txt"
if [ ! -s "$work/times.txt" ]; then
  echo "bench_against.sh: no benchmark matched \"$filter\" on either side" >&2
  exit 1
fi

echo "engine benchmark, CPU ms per run: ${commit:0:7} (REV) against $(git rev-parse --short HEAD)$(
  git diff --quiet HEAD -- . || echo ' with local changes'), $rounds alternating rounds on $(uname -n)"
printf '%-42s %9s %9s %9s %9s %8s %8s\n' benchmark "REV min" "REV med" "this min" "this med" "x (min)" "x (med)"
sort -k2,2 -k1,1 -k3,3g "$work/times.txt" | awk '
  function median(a, n) { return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  function flush() {
    if (name == "") return
    if (no == 0 || nn == 0) { printf "%-42s missing on one side\n", name; return }
    mo = median(o, no); mn = median(w, nn)
    printf "%-42s %9.1f %9.1f %9.1f %9.1f %8.2f %8.2f\n", name, o[1], mo, w[1], mn, o[1] / w[1], mo / mn
  }
  $2 != name { flush(); name = $2; no = nn = 0 }
  $1 == "old" { o[++no] = $3 }
  $1 == "new" { w[++nn] = $3 }
  END { flush() }'
