#!/usr/bin/env bash
# Builds parasim's libFuzzer targets (clang, ASan + UBSan, one per loader; tests/fuzz) in the
# sanitizer tree, build-asan (scripts/asan_build.sh; scripts/sanitize.sh builds the same tree, so
# after it this builds nothing), and runs each for a bounded time, two at a time. Fails if any target finds a crash,
# a leak, an out-of-memory or a timeout. docs/reliability.md explains what to do with a finding.
#
#   scripts/fuzz.sh                 every target, FUZZ_TIME seconds each (default 30)
#   scripts/fuzz.sh 60 model kineto two targets, 60 seconds each
#
# The corpus lives in the repository: each target reads and grows tests/fuzz/corpus/<target>/
# (new inputs that reach new code land there; past findings in tests/fuzz/regressions/ seed it
# too). Commit what a run adds, so that the next short CI run (20 s per target) starts where this
# one ended instead of from the seeds.
#
# Release run (before tagging; about 40 minutes on two cores): 600 s per target, then shrink
# every corpus to the inputs that still add coverage, and commit the result:
#   FUZZ_TIME=600 bash scripts/fuzz.sh
#   for t in model hf_config onnx cluster strategy strategy_json efficiency_csv profile kineto taskgraph placement results runs calibration nccl_tests; do
#     mkdir -p /tmp/min/$t && build-asan/bin/fuzz_$t -merge=1 /tmp/min/$t tests/fuzz/corpus/$t &&
#     rm -f tests/fuzz/corpus/$t/* && cp /tmp/min/$t/* tests/fuzz/corpus/$t/
#   done
# (keep the named seeds: git checkout tests/fuzz/corpus/*/*.json tests/fuzz/corpus/onnx after the copy)
#
# Environment: FUZZ_TIME (seconds per target), FUZZ_JOBS (targets at once, default 2),
# FUZZ_BUILD_DIR (default build-asan).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_TIME:-30}
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then seconds=$1; shift; fi
jobs=${FUZZ_JOBS:-2}
build=${FUZZ_BUILD_DIR:-build-asan}
all_targets=(model hf_config onnx cluster strategy strategy_json efficiency_csv profile kineto taskgraph placement results runs calibration nccl_tests)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")

for t in "${targets[@]}"; do
  if [[ ! " ${all_targets[*]} " =~ " $t " ]]; then
    echo "fuzz.sh: unknown target \"$t\"; known: ${all_targets[*]}" >&2
    exit 2
  fi
done
echo "fuzz: building ${#targets[@]} targets in $build (clang, ASan + UBSan)"
ASAN_BUILD_DIR=$build bash scripts/asan_build.sh "${targets[@]/#/fuzz_}"

run_one() {  # target -> exit status of the fuzzer; log in $build/fuzz-logs/<target>.log
  local t=$1
  local work="tests/fuzz/corpus/$t" artifacts="$build/fuzz-artifacts/$t/"
  mkdir -p "$work" "$artifacts" "$build/fuzz-logs"
  # The checked-in corpus is the work corpus (libFuzzer adds to its first folder); past
  # findings seed it too.
  local seeds=()
  [ -d tests/fuzz/regressions/"$t" ] && seeds+=(tests/fuzz/regressions/"$t")
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/bin/fuzz_$t" "$work" "${seeds[@]}" -dict=tests/fuzz/dict/"$t".dict \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="$artifacts" -print_final_stats=1 >"$build/fuzz-logs/$t.log" 2>&1
}

summarize() {  # target status -> one line
  local t=$1 status=$2 log="$build/fuzz-logs/$1.log"
  local execs cov ft
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
  if [ "$status" -eq 0 ]; then
    printf 'fuzz: %-15s ok      %8s execs in %ss, coverage %s edges, %s features\n' "$t" "${execs:-?}" "$seconds" "${cov:-?}" "${ft:-?}"
  else
    printf 'fuzz: %-15s FAILED  (exit %s) see %s\n' "$t" "$status" "$log"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|parasim fuzz|.*runtime error)' "$log" | head -5 | sed 's/^/      /'
    for a in "$build/fuzz-artifacts/$t/"*; do
      [ -f "$a" ] && echo "      finding: $a  -> add it as tests/fuzz/regressions/$t/<what-it-is>.json once fixed"
    done
  fi
}

echo "fuzz: running ${#targets[@]} targets for ${seconds}s each, $jobs at a time"
declare -A status
pending=("${targets[@]}")
running=()
declare -A pid_of
while [ ${#pending[@]} -gt 0 ] || [ ${#running[@]} -gt 0 ]; do
  while [ ${#running[@]} -lt "$jobs" ] && [ ${#pending[@]} -gt 0 ]; do
    t=${pending[0]}; pending=("${pending[@]:1}")
    rm -f "$build/fuzz-artifacts/$t/"* 2>/dev/null || true
    run_one "$t" & pid_of[$t]=$!
    running+=("$t")
  done
  wait -n || true
  still=()
  for t in "${running[@]}"; do
    if kill -0 "${pid_of[$t]}" 2>/dev/null; then still+=("$t"); continue; fi
    rc=0; wait "${pid_of[$t]}" || rc=$?
    status[$t]=$rc
    summarize "$t" "$rc"
  done
  running=("${still[@]}")
done

failed=0
for t in "${targets[@]}"; do [ "${status[$t]}" -ne 0 ] && failed=$((failed + 1)); done
echo "fuzz: $(( ${#targets[@]} - failed )) passed, $failed failed"
[ "$failed" -eq 0 ]
