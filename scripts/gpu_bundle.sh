#!/usr/bin/env bash
# Packs parasim and its GPU tests, built here, for a GPU machine that cannot build them: one whose
# image has the CUDA toolkit but none of scripts/setup.sh's Debian packages and no package
# registry (docs/gpu_profiling.md, "A GPU machine without the build's packages").
#
#   bash scripts/gpu_bundle.sh [DIR]    (default .gpu-bundle; build first with scripts/build.sh)
#
# DIR/bin holds parasim and parasim_gpu_tests; DIR/lib the shared libraries they load that are
# neither the C runtime nor CUDA's (oneDNN, protobuf, ONNX, Open MPI, ...). CUDA's libraries are
# left out: the GPU machine has its own, matching its driver, and `gpu_check.sh measure` finds
# them there. DIR.tar.gz is the same, compressed (under the device tool's 64 MiB: oneDNN alone is
# 40 MB). On the GPU machine: PARASIM_BUNDLE=DIR bash scripts/gpu_check.sh measure (after
# `tar xzf DIR.tar.gz` where the tarball travelled).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-.gpu-bundle}
bins=(build/bin/parasim build/bin/parasim_gpu_tests)
for b in "${bins[@]}"; do
  [ -x "$b" ] || { echo "gpu_bundle: no $b: run scripts/build.sh first (with the CUDA toolkit)" >&2; exit 1; }
done
ldd build/bin/parasim | grep -q 'libcudart\.' ||
  { echo "gpu_bundle: build/bin/parasim was built without CUDA (no CUDA toolkit at configure time)" >&2; exit 1; }

rm -rf "$out" "$out.tar.gz"
mkdir -p "$out/bin" "$out/lib"
cp "${bins[@]}" "$out/bin/"
# The C runtime and the compiler's runtime are the GPU machine's (newer there; ours would shadow
# its programs' own); CUDA's libraries must match its driver.
system='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libutil|libgcc_s|libstdc\+\+)\.'
cuda='^lib(cudart|cupti|cudnn|nccl|cublas|cublasLt|nvperf|cuda)[._]'
ldd "${bins[@]}" | awk '/=> \//{print $1, $3}' | sort -u | while read -r name path; do
  [[ $name =~ $system || $name =~ $cuda ]] && continue
  cp -L "$path" "$out/lib/$name"
done
{
  echo "parasim GPU bundle from $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo '+local changes'),"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), $(/usr/local/cuda/bin/nvcc --version | tail -1)"
  echo "needs from the GPU machine: $(ldd "${bins[@]}" | awk '/=> /{print $1}' | grep -E "$cuda" | sort -u | paste -sd' ')"
} > "$out/BUNDLE"
cat "$out/BUNDLE"
tar czf "$out.tar.gz" "$out"
du -sh "$out" "$out.tar.gz"
