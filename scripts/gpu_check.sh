#!/usr/bin/env bash
# The one command for a GPU machine: from a fresh clone to measured traces in two commands of at
# most 10 minutes each (docs/gpu_profiling.md, "Running on a GPU machine").
#
#   bash scripts/gpu_check.sh build     driver check, configure + build (CUDA required), stops here
#                                       without a GPU
#   bash scripts/gpu_check.sh measure   gpu tests, profiles, link probe, validate --suite ci on CUDA,
#                                       all under traces/<gpu>/, then validate over MPI with one rank
#                                       per GPU (reports/validation/cuda-mpi-<gpu>/); resumable: rerun
#                                       it to continue
#   bash scripts/gpu_check.sh           both
#
#   PARASIM_BUNDLE=DIR bash scripts/gpu_check.sh measure
#                                       measure with parasim built elsewhere (scripts/gpu_bundle.sh),
#                                       on a GPU machine that has CUDA but not our build's packages:
#                                       CUDA's libraries are found on the machine, the rest in DIR/lib
#
# Exit codes: 0 done; 1 a step failed; 2 bad usage; 3 no GPU (after building); 4 the NVIDIA
# driver is too old for CUDA 13; 75 the stage's time budget ran out (rerun the same command:
# finished steps are skipped). GPU_CHECK_BUDGET_S (default 540) is the budget of one stage.
set -uo pipefail
cd "$(dirname "$0")/.."

stage=${1:-all}
case "$stage" in build | measure | all) ;; *) echo "usage: $0 [build|measure|all]" >&2; exit 2 ;; esac
budget=${GPU_CHECK_BUDGET_S:-540}
start=$SECONDS
parasim=./build/bin/parasim
bundle=${PARASIM_BUNDLE:-}
# CUDA 13.0 needs a Linux driver >= 580.65.06 (CUDA 13.0 release notes, "CUDA Toolkit and
# Corresponding Driver Versions").
min_driver=580.65.06

say() { echo "gpu_check: $*" >&2; }

version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }

# --------------------------------------------------------------------------- driver
gpu_state=ok
driver=""
if ! command -v nvidia-smi >/dev/null 2>&1; then
  gpu_state=none
  gpu_reason="nvidia-smi not found (no NVIDIA driver installed)"
elif ! driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1) || [ -z "$driver" ]; then
  gpu_state=none
  gpu_reason="nvidia-smi finds no GPU: $(nvidia-smi -L 2>&1 | head -1)"
elif ! version_ge "$driver" "$min_driver"; then
  gpu_state=old
  gpu_reason="driver $driver is older than $min_driver, the oldest that runs CUDA 13.0"
fi
if [ "$gpu_state" = ok ]; then
  say "driver $driver; GPUs: $(nvidia-smi --query-gpu=name --format=csv,noheader | paste -sd, -)"
fi

no_gpu_exit() {
  if [ "$gpu_state" = none ]; then
    echo "gpu_check: no GPU: $gpu_reason. parasim is built (CPU backends work); run this script on a machine with an NVIDIA GPU to measure." >&2
    exit 3
  fi
  if [ "$gpu_state" = old ]; then
    cat >&2 <<EOF
gpu_check: $gpu_reason.
  Install a driver >= $min_driver (Debian/Ubuntu: the nvidia-driver-580 or newer package, or the
  NVIDIA data-center driver .run file), reboot, then rerun this script. On data-center GPUs the
  CUDA forward-compatibility package (cuda-compat-13-0) also works without a driver upgrade:
  export LD_LIBRARY_PATH=/usr/local/cuda/compat:\$LD_LIBRARY_PATH before rerunning.
EOF
    exit 4
  fi
}

# --------------------------------------------------------------------------- bundle
# A bundle's CUDA libraries are this machine's (they match its driver), found where its toolkit or
# its Python packages keep them; of the bundle's own libraries only those this machine lacks are put
# on the path (ours would shadow newer system ones that its own programs need).
use_bundle() {
  [ -x "$bundle/bin/parasim" ] || { say "PARASIM_BUNDLE=$bundle: no $bundle/bin/parasim (scripts/gpu_bundle.sh makes it)"; exit 2; }
  parasim=$bundle/bin/parasim
  local own=/tmp/parasim-bundle-lib dirs="" so found f
  rm -rf "$own" && mkdir -p "$own"
  for f in "$bundle"/lib/*; do
    ldconfig -p | grep -q "^[[:space:]]*$(basename "$f") " || ln -s "$(realpath "$f")" "$own/"
  done
  local missing=() names=()
  for so in $(sed -n 's/^needs from the GPU machine: //p' "$bundle/BUNDLE") libcublas.so.13 libcublasLt.so.13; do
    ldconfig -p | grep -q "^[[:space:]]*$so " || { missing+=("$so"); names+=(-o -name "$so"); }
  done
  if [ ${#missing[@]} -gt 0 ]; then  # one walk for all of them: the toolkit's folder first
    local hits
    hits=$(find /usr/local/cuda/ /usr/local/ /opt/ /usr/lib/ \( -false "${names[@]}" \) 2>/dev/null)
    for so in "${missing[@]}"; do
      found=$(grep -m1 "/$so\$" <<<"$hits")
      [ -n "$found" ] || { say "this machine has no $so (a CUDA 13 library parasim needs)"; exit 1; }
      case ":$dirs:" in *":$(dirname "$found"):"*) ;; *) dirs="$dirs:$(dirname "$found")" ;; esac
    done
  fi
  export LD_LIBRARY_PATH="$own$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PARASIM_BINARY=$parasim  # the GPU tests run this parasim, not the build's
  say "bundle $(head -1 "$bundle/BUNDLE")"
  say "its libraries: $(ldd "$parasim" | awk '/=> /{print $1 "=" $3}' | grep -E 'cud|nccl|cupti|dnnl|not' | paste -sd' ')"
  if ldd "$parasim" | grep -q 'not found'; then say "missing libraries (above)"; exit 1; fi
}
if [ -n "$bundle" ]; then
  [ "$stage" = measure ] || { say "PARASIM_BUNDLE is built elsewhere: only 'measure' takes it"; exit 2; }
  use_bundle
fi

# --------------------------------------------------------------------------- build
if [ "$stage" = build ] || [ "$stage" = all ]; then
  # With a GPU the CUDA backends are required (ON fails loudly when the toolkit is incomplete);
  # without one AUTO builds whatever this machine has.
  cuda=AUTO
  [ "$gpu_state" = ok ] && cuda=ON
  say "building (PARASIM_CUDA=$cuda) with scripts/build.sh"
  if ! bash scripts/build.sh -DPARASIM_CUDA=$cuda; then
    say "build failed"
    exit 1
  fi
  say "built $parasim ($((SECONDS - start)) s)"
  no_gpu_exit
  [ "$stage" = build ] && { say "next: bash scripts/gpu_check.sh measure"; exit 0; }
fi

# --------------------------------------------------------------------------- measure
no_gpu_exit
[ -x "$parasim" ] || { say "no $parasim: run 'bash scripts/gpu_check.sh build' first"; exit 1; }

# Runs one step unless its output exists; stops the stage (exit 75) when less than `need` seconds
# of the budget are left, so a rerun continues where this one stopped.
written=()
step() {
  local out=$1 need=$2
  shift 2
  if [ -s "$out" ]; then
    say "have $out (skipped; delete it to measure again)"
    written+=("$out")
    return 0
  fi
  if [ $((SECONDS - start + need)) -gt "$budget" ]; then
    say "time budget of ${budget}s nearly spent before $out: rerun 'bash scripts/gpu_check.sh measure' to continue"
    summary
    exit 75
  fi
  say "-> $out"
  if ! "$@"; then
    say "FAILED: $*"
    summary
    exit 1
  fi
  written+=("$out")
}

summary() {
  if [ ${#written[@]} -gt 0 ]; then
    echo "gpu_check: wrote (or kept):"
    printf '  %s\n' "${written[@]}"
  fi
}

# The device folder: where `parasim profile --backend cuda` writes by default (the device kind).
probe=$($parasim profile --backend cuda --model tiny_cnn --batch 8 --reps 3 --warmup 1 -o /tmp/gpu_check_probe.json 2>&1) || {
  echo "$probe" >&2
  say "the first CUDA profile failed (above)"
  exit 1
}
kind=$(grep -o '"kind": *"[^"]*"' /tmp/gpu_check_probe.json | head -1 | sed 's/.*: *"\(.*\)"/\1/')
dir=traces/$(echo "$kind" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9._-]/-/g')
mkdir -p "$dir" reports/validation
say "device kind $kind -> $dir"

write_readme() {
  {
    echo "# $kind"
    echo
    echo "Measured $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) by \`bash scripts/gpu_check.sh measure\` at commit"
    echo "$(git rev-parse --short HEAD 2>/dev/null || echo unknown): per-op profiles with \`parasim profile --backend cuda\`"
    echo "(CUPTI device time, median of 10 repetitions after 3 warm-ups; docs/gpu_profiling.md), the link"
    echo "probe with \`parasim profile links\` (CUDA events and nccl-tests timing, alpha-beta fits), the"
    echo "\`gpu\` ctest label (gpu-tests.log) and \`parasim validate --backend cuda --suite ci\`"
    echo "(reports/validation/). Each profile's own \`command\` field is the exact command line."
    echo
    echo "## Machine and software"
    echo
    echo '```'
    nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit --format=csv
    echo
    nvidia-smi topo -m 2>/dev/null || true
    echo
    /usr/local/cuda/bin/nvcc --version | tail -2
    grep -h '#define CUDNN_MAJOR\|#define CUDNN_MINOR\|#define CUDNN_PATCHLEVEL' /usr/local/cuda/include/cudnn_version.h 2>/dev/null
    grep -h '#define NCCL_MAJOR\|#define NCCL_MINOR\|#define NCCL_PATCH' /usr/local/cuda/include/nccl.h 2>/dev/null
    if [ -n "$bundle" ]; then
      echo
      echo "parasim from a bundle built elsewhere (scripts/gpu_bundle.sh): $(head -2 "$bundle/BUNDLE" | paste -sd' ')"
      echo "CUDA libraries it loaded here:"
      ldd "$parasim" | awk '/=> /{print "  " $1 " => " $3}' | grep -E 'cud|nccl|cupti'
      # The loaded libraries' versions, read through the same .so files.
      python3 - "$parasim" <<'PY' 2>/dev/null || true
import ctypes, subprocess, sys
libs = dict(l.split(" => ")[0].split()[0:1] + [l.split(" => ")[1].split()[0]]
            for l in subprocess.run(["ldd", sys.argv[1]], capture_output=True, text=True).stdout.splitlines() if " => /" in l)
def ver(name, fn):
    try:
        v = getattr(ctypes.CDLL(libs[name]), fn)
        return v
    except Exception:
        return None
f = ver("libcudnn.so.9", "cudnnGetVersion")
if f: f.restype = ctypes.c_size_t; print("cuDNN", f())
f = ver("libnccl.so.2", "ncclGetVersion")
if f:
    x = ctypes.c_int(); f(ctypes.byref(x)); print("NCCL", x.value)
f = ver("libcudart.so.13", "cudaRuntimeGetVersion")
if f:
    x = ctypes.c_int(); f(ctypes.byref(x)); print("CUDA runtime", x.value)
PY
    fi
    echo
    echo "profile device block (as parasim reads it at run time):"
    sed -n '/"device"/,/}/p' /tmp/gpu_check_probe.json
    echo '```'
  } > "$dir/README.md"
}
step "$dir/README.md" 5 write_readme

# A failed run keeps its log as gpu-tests.failed.log and is retried by the next run.
gpu_tests() {
  local log=$dir/gpu-tests.log run=(ctest --test-dir build -L gpu --output-on-failure)
  # A bundle has no ctest tree: its test binary runs the same tests (the label's only binary).
  [ -n "$bundle" ] && run=("$bundle/bin/parasim_gpu_tests")
  if "${run[@]}" > "$log.tmp" 2>&1; then
    mv "$log.tmp" "$log"
    tail -3 "$log" >&2
    return 0
  fi
  mv "$log.tmp" "$dir/gpu-tests.failed.log"
  tail -20 "$dir/gpu-tests.failed.log" >&2
  return 1
}
step "$dir/gpu-tests.log" 240 gpu_tests

# Profiles: the Pal et al. models and the transformer stacks in both mixed precisions. Identical
# layers share a signature, so gpt2's 12 layers are measured once each kind of op.
profile() {  # model batch dtype
  local out="$dir/$1-b$2-$3.json"
  step "$out" 90 "$parasim" profile --backend cuda --model "$1" --batch "$2" --dtype "$3" -o "$out"
}
for dtype in fp16 bf16; do
  profile resnet50 64 "$dtype"
  profile inception_v3 64 "$dtype"
  profile gnmt 128 "$dtype"
  profile bert_large 16 "$dtype"
  profile gpt2 8 "$dtype"
done

# The GPU kernel model against these measurements: every measured op phase priced by the model,
# the error per profile and the matrix/memory factors that fit them (docs/fidelity.md). With a
# GPU this is what says how far the default model is from the card, op by op.
kernel_fit() {
  local profiles
  profiles=$(ls "$dir"/*-b*-*.json | paste -sd, -)
  "$parasim" calibrate --profiles "$profiles" -o reports/validation/kernel-model-$(basename "$dir").json \
    > "$1.tmp" && mv "$1.tmp" "$1"
}
step "reports/validation/kernel-model-$(basename "$dir").txt" 60 kernel_fit "reports/validation/kernel-model-$(basename "$dir").txt"
[ -s "reports/validation/kernel-model-$(basename "$dir").json" ] && written+=("reports/validation/kernel-model-$(basename "$dir").json")

# The card's own GEMM rate and copy bandwidth (scripts/gpu_microbench.py on torch, about 15 s) and
# the kernel factors they give (calibrate --microbench, docs/fidelity.md); said and skipped where
# python3 has no torch with CUDA (the profiles above need none).
mb="reports/validation/microbench-$(basename "$dir").json"
microbench() { python3 scripts/gpu_microbench.py -o "$mb.tmp" > "${mb%.json}.log" 2>&1 && mv "$mb.tmp" "$mb"; }
microbench_fit() {
  "$parasim" calibrate --microbench "$mb" -o "${1%.txt}.json" > "$1.tmp" && mv "$1.tmp" "$1"
}
# The same card's GEMM rate in a burst, sustained at its power limit and at a step's duty cycles
# (scripts/gpu_gemm_clocks.py, about 60 s): whether parasim's burst-measured Hopper fraction holds
# for a training step (docs/fidelity.md, "Not done yet").
clocks="reports/validation/gemm-clocks-$(basename "$dir").json"
gemm_clocks() { python3 scripts/gpu_gemm_clocks.py -o "$clocks.tmp" > "${clocks%.json}.log" 2>&1 && mv "$clocks.tmp" "$clocks"; }
if python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  step "$mb" 90 microbench
  fit_txt="reports/validation/microbench-fit-$(basename "$dir").txt"
  step "$fit_txt" 10 microbench_fit "$fit_txt"
  step "$clocks" 90 gemm_clocks
else
  say "python3 has no torch with CUDA: the GEMM microbenchmarks (scripts/gpu_microbench.py, gpu_gemm_clocks.py) are skipped"
fi

step "$dir/links.json" 120 "$parasim" profile links --max-bytes 268435456 -o "$dir/links.json" --cluster "$dir/links.cluster.json"
[ -s "$dir/links.cluster.json" ] && written+=("$dir/links.cluster.json")

suite=reports/validation/cuda-$(basename "$dir")-ci-suite.md
step "$suite" 240 "$parasim" validate --backend cuda --suite ci -o "$suite"

# --------------------------------------------------------------------------- CUDA over MPI
# One rank per GPU (mpirun -np N parasim validate --backend cuda): NCCL send/recv and collectives
# between ranks, the cluster built from the ranks' NCCL probe (docs/executor.md). Needs MPI in
# the build and two GPUs; with one GPU, -np 1 runs and the report says why the rest was skipped.
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
mpirun_path=$(sed -n 's/^PARASIM_MPIEXEC:FILEPATH=//p' build/CMakeCache.txt 2>/dev/null)
mpi_built=no
grep -q '^PARASIM_MPI:BOOL=ON' build/CMakeCache.txt 2>/dev/null && [ -x "$mpirun_path" ] && mpi_built=yes
if [ -n "$bundle" ]; then  # built elsewhere: this machine's mpirun, if it has one
  mpirun_path=$(command -v mpirun || true)
  mpi_built=no
  ldd "$parasim" | grep -q libmpi && [ -n "$mpirun_path" ] && mpi_built=yes
fi

versions() {  # the machine a report was measured on
  echo '```'
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv
  /usr/local/cuda/bin/nvcc --version | tail -1
  grep -h '#define NCCL_MAJOR\|#define NCCL_MINOR\|#define NCCL_PATCH' /usr/local/cuda/include/nccl.h 2>/dev/null
  echo "$("$mpirun_path" --version 2>/dev/null | head -1)"
  echo '```'
}

mpi_validate() {  # out ranks strategy [skip note]
  local out=$1 n=$2 strategy=$3 note=${4:-}
  local cmd=(validate --backend cuda --model tiny_cnn --batch 8 --strategy "$strategy" --reps 10 --warmup 3)
  local body
  # By name on the PATH (Open MPI run as /usr/bin/mpirun takes "/" for its prefix and refuses).
  # -np 1 is one process as without mpirun (the CUDA runtime of one GPU), started by the launcher.
  body=$(PATH="$(dirname "$mpirun_path"):$PATH" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun --bind-to none -np "$n" "$parasim" "${cmd[@]}" 2>&1) || { echo "$body" >&2; return 1; }
  {
    echo "# validate --backend cuda on $n rank(s): tiny_cnn $strategy"
    echo
    echo "Measured $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) by \`bash scripts/gpu_check.sh measure\` at commit"
    echo "$(git rev-parse --short HEAD 2>/dev/null || echo unknown):"
    echo
    echo "    mpirun --bind-to none -np $n parasim ${cmd[*]}"
    [ -n "$note" ] && { echo; echo "$note"; }
    echo
    versions
    echo
    echo '```'
    echo "$body"
    echo '```'
  } > "$out"
}

mpi_dir=reports/validation/cuda-mpi-$(basename "$dir")
mkdir -p "$mpi_dir"
if [ "$mpi_built" = no ] && [ -n "$bundle" ]; then
  say "CUDA over MPI skipped: this machine has no mpirun (Open MPI's launcher) for the bundle's parasim"
elif [ "$mpi_built" = no ]; then
  say "CUDA over MPI skipped: this build has no MPI (libopenmpi-dev openmpi-bin, then rebuild)"
elif [ "$gpus" -lt 2 ]; then
  why="Multi-GPU part skipped: this machine has $gpus GPU; CUDA over MPI runs one rank per GPU, so -np 2 needs two."
  say "$why"
  step "$mpi_dir/np1-tiny_cnn-dp1.md" 120 mpi_validate "$mpi_dir/np1-tiny_cnn-dp1.md" 1 dp=1 "$why"
else
  step "$mpi_dir/np2-tiny_cnn-dp2.md" 120 mpi_validate "$mpi_dir/np2-tiny_cnn-dp2.md" 2 dp=2
  step "$mpi_dir/np2-tiny_cnn-1f1b.md" 120 mpi_validate "$mpi_dir/np2-tiny_cnn-1f1b.md" 2 mp=2,schedule=1f1b,micro=4
  if [ "$gpus" -ge 4 ]; then
    step "$mpi_dir/np4-tiny_cnn-dp2-1f1b.md" 150 \
      mpi_validate "$mpi_dir/np4-tiny_cnn-dp2-1f1b.md" 4 dp=2,mp=2,schedule=1f1b,micro=4
  fi
fi

summary
say "done in $((SECONDS - start)) s; commit $dir/, $suite and $mpi_dir/"
exit 0
