#!/usr/bin/env bash
# One `ctest -L mpi` case: runs parasim under mpirun and checks what every rank did.
#   run_mpi_case.sh <mpirun> <parasim> <work dir> <case> [args...]
# Cases:
#   validate N ARGS...     mpirun -np N parasim validate ARGS --json: exit 0, N ranks in the JSON, a measured step
#   same_bytes ARGS...     parasim ARGS -o FILE without mpirun, then under -np 1, 2 and 3: identical files
#   dead_rank              3 ranks; rank 1 is killed mid-run: every other rank exits within 30 s naming rank 1
#   mismatched_graph       rank 0 and rank 1 run different batches: both exit with a message naming the mismatch
#   rank_count             -np 3 with dp=2: every rank says one rank per device, exit 2
#   cuda_without_gpu ON|OFF  -np 2 --backend cuda where no GPU is visible: every rank says so, exit 1
#                          (exit 77, skipped, on a machine with GPUs: gpu_check.sh runs the real thing);
#                          OFF (built without CUDA): every rank says the build has no CUDA, exit 2
# We run as root in CI; mpirun refuses that unless told (the harness's business, not parasim's).
set -uo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Under AddressSanitizer (scripts/sanitize.sh), Open MPI 4.1 never frees what MPI_Init allocates
# (libmpi, libopen-pal, hwloc, and MCA plugins it dlcloses, which LeakSanitizer cannot even name),
# so leak checking is off for the ranks; every other ASan and UBSan check stays on. parasim's own
# MPI code is leak-checked by parasim_mpi_tests, which never start MPI.
# (A build without ASan ignores the variable.)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# Ranks of this test share the CI machine's few cores with other tests: no binding, oversubscribe.
# By name on the PATH: Open MPI's mpirun run as /usr/bin/mpirun takes "/" for its prefix and refuses.
PATH="$(dirname "$1"):$PATH"
mpirun=("$(basename "$1")" --bind-to none --oversubscribe -x ASAN_OPTIONS)
parasim=$2
work=$3
case=$4
shift 4
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
quick=(--reps 2 --warmup 1 --profile-reps 2 --priority default --no-progress)

case "$case" in
validate)
  n=$1; shift
  "${mpirun[@]}" -np "$n" "$parasim" validate "$@" "${quick[@]}" --json -o "$work/out.json" >"$work/stdout" 2>"$work/stderr"
  rc=$?
  [ "$rc" -eq 0 ] || { cat "$work/stderr" >&2; fail "mpirun -np $n parasim validate $* exited $rc"; }
  python3 - "$work/out.json" "$n" <<'PY' || fail "validate JSON"
import json, sys
j = json.load(open(sys.argv[1])); n = int(sys.argv[2])
ranks = j["mpi_ranks"]
assert [r["rank"] for r in ranks] == list(range(n)), ranks
assert [r["device"] for r in ranks] == list(range(n)), ranks
assert len({r["pid"] for r in ranks}) == n, "one process per rank"
assert j["devices"] == n and j["measured_ms"] > 0 and j["projected_ms"] > 0, j
assert j["runtime"].startswith("mpi-cpu (%d ranks" % n), j["runtime"]
assert len(j["devices_busy"]) == n and all(d["measured_compute_ms"] > 0 for d in j["devices_busy"]), j["devices_busy"]
links = j["mpi_links"]
assert links["pingpong"]["beta_gbps"] > 0 and len(links["pingpong"]["points"]) == 5, links
# One host here: one representative pair, ranks 0 and 1, probed over MPI.
assert links["transport"] == "mpi", links
assert [(p["ranks"], p["class"]) for p in links["pairs"]] == [([0, 1], "intra-host")], links["pairs"]
assert links["pairs"][0]["points"] == links["pingpong"]["points"], links
print("ok: %s on %d ranks: projected %.3f ms, measured %.3f ms" % (j["strategy"], n, j["projected_ms"], j["measured_ms"]))
PY
  ;;
same_bytes)
  "$parasim" "$@" -o "$work/single" >/dev/null 2>"$work/stderr" || fail "parasim $* exited $?"
  for n in 1 2 3; do
    "${mpirun[@]}" -np "$n" "$parasim" "$@" -o "$work/np$n" >/dev/null 2>>"$work/stderr"
    rc=$?
    [ "$rc" -eq 0 ] || { cat "$work/stderr" >&2; fail "mpirun -np $n parasim $* exited $rc"; }
    cmp "$work/single" "$work/np$n" || fail "-np $n wrote different bytes than one process"
  done
  echo "ok: $(wc -c <"$work/single") bytes, identical with -np 1, 2, 3"
  ;;
dead_rank)
  # --enable-recovery: mpirun itself would otherwise kill the job when a rank dies (and name the
  # rank); this leaves the survivors to find it out, as under launchers that do not.
  start=$SECONDS
  "${mpirun[@]}" --enable-recovery -np 3 "$parasim" validate --model tiny_cnn --batch 6 --strategy dp=3 \
    --reps 100000 --warmup 1 --profile-reps 2 --priority default --no-progress >"$work/stdout" 2>"$work/stderr" &
  launcher=$!
  victim=""
  for _ in $(seq 1 100); do  # the rank-1 process, once it is up
    for pid in $(pgrep -P "$launcher"); do
      if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then victim=$pid; fi
    done
    [ -n "$victim" ] && break
    sleep 0.1
  done
  [ -n "$victim" ] || { kill "$launcher"; fail "rank 1 never started"; }
  sleep 3
  ranks=$(pgrep -P "$launcher")
  killed=$SECONDS
  kill -9 "$victim"
  wait "$launcher"; rc=$?
  took=$((SECONDS - killed))
  cat "$work/stderr" >&2
  [ "$took" -le 30 ] || fail "the job took ${took} s to end after rank 1 died"
  # (mpirun --enable-recovery exits 0 even when a rank aborts the job: check the processes.)
  # A rank may still be exiting when mpirun returns: allow it the rest of the 30 s.
  for pid in $ranks; do
    while kill -0 "$pid" 2>/dev/null && [ $((SECONDS - killed)) -le 30 ]; do sleep 0.2; done
    kill -0 "$pid" 2>/dev/null && fail "rank process $pid still running 30 s after rank 1 died (mpirun exit $rc)"
  done
  for r in 0 2; do
    grep -q "parasim: rank $r: rank 1 (.*) sent no heartbeat" "$work/stderr" || fail "rank $r did not name rank 1"
  done
  echo "ok: every rank ended ${took} s after rank 1 died (started $((killed - start)) s into the run)"
  ;;
mismatched_graph)
  start=$SECONDS
  "${mpirun[@]}" -np 1 "$parasim" validate --model tiny_cnn --batch 8 --strategy dp=2 "${quick[@]}" : \
    -np 1 "$parasim" validate --model tiny_cnn --batch 16 --strategy dp=2 "${quick[@]}" >"$work/stdout" 2>"$work/stderr"
  rc=$?
  cat "$work/stderr" >&2
  [ "$rc" -eq 2 ] || fail "expected exit 2, got $rc"
  grep -q "parasim: error: rank 1 run a task graph that differs from rank 0's (hash [0-9a-f]*); every rank must run the same command" \
    "$work/stderr" || fail "rank 0's message"
  grep -q "parasim: error: the task graph of rank 1 (hash [0-9a-f]*) differs from rank 0's (hash [0-9a-f]*)" \
    "$work/stderr" || fail "rank 1's message"
  [ ! -s "$work/stdout" ] || fail "printed a table"
  echo "ok: both ranks refused in $((SECONDS - start)) s"
  ;;
rank_count)
  "${mpirun[@]}" -np 3 "$parasim" validate --model tiny_cnn --batch 8 --strategy dp=2 "${quick[@]}" >"$work/stdout" 2>"$work/stderr"
  rc=$?
  cat "$work/stderr" >&2
  [ "$rc" -eq 2 ] || fail "expected exit 2, got $rc"
  [ "$(grep -c "runs 2 devices and this MPI job has 3 ranks: run one rank per device (mpirun -np 2)" "$work/stderr")" -eq 3 ] ||
    fail "every rank must say why"
  echo "ok"
  ;;
cuda_without_gpu)
  if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU; then
    echo "skipped: this machine has GPUs"; exit 77
  fi
  "${mpirun[@]}" -np 2 "$parasim" validate --backend cuda --model tiny_cnn --batch 8 --strategy dp=2 "${quick[@]}" \
    >"$work/stdout" 2>"$work/stderr"
  rc=$?
  cat "$work/stderr" >&2
  if [ "${1:-ON}" = "OFF" ]; then
    [ "$rc" -eq 2 ] || fail "expected exit 2 (built without CUDA), got $rc"
    [ "$(grep -c "validate on MPI ranks needs the CUDA runtime over NCCL, and this parasim was built without CUDA" \
      "$work/stderr")" -eq 2 ] || fail "every rank must say why"
  else
    [ "$rc" -eq 1 ] || fail "expected exit 1, got $rc"
    [ "$(grep -c "parasim: runtime failure: rank 0: --backend cuda: no CUDA GPU is visible to this rank" \
      "$work/stderr")" -eq 2 ] || fail "every rank must say why"
  fi
  [ ! -s "$work/stdout" ] || fail "printed a table"
  echo "ok"
  ;;
*) fail "unknown case $case" ;;
esac
