#!/usr/bin/env bash
# Installs the Debian packages parasim builds with, only those that are missing.
# Idempotent and quiet when everything is already there. Run as root (or with sudo available).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  nlohmann-json3-dev libboost-graph-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libdnnl-dev ocl-icd-opencl-dev gnuplot-nox
  libonnx-dev libprotobuf-dev
  clang libclang-rt-14-dev libomp-dev clang-format
  libopenmpi-dev openmpi-bin
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "parasim setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Fail here, loudly, rather than at CMake's configure (which stops anyway: oneDNN is required
# unless -DPARASIM_DNNL=OFF) when a package did not install.
still_missing=()
for p in "${missing[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    still_missing+=("$p")
  fi
done
if [ ${#still_missing[@]} -ne 0 ]; then
  echo "parasim setup: FAILED to install ${still_missing[*]}" >&2
  exit 1
fi
