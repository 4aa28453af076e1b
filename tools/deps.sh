#!/usr/bin/env bash
# Installs, from Debian 12's packages, whatever attend's build, tests and benchmarks need and the
# machine lacks. Idempotent: a machine that has everything is left untouched.
set -euo pipefail
packages=(cmake ninja-build g++ clang-14 clang libboost-dev libboost-test-dev libxsimd-dev libbenchmark-dev
          libeigen3-dev libopenblas-dev libdnnl-dev ocl-icd-opencl-dev libomp-dev libclang-rt-14-dev python3-matplotlib python3-numpy
          g++-aarch64-linux-gnu qemu-user)  # the last two: the aarch64 (NEON) tests, cross-built and run under qemu
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "tools/deps.sh: installing ${missing[*]}"
sudo=()
if ((EUID != 0)); then
  command -v sudo >/dev/null || { echo "tools/deps.sh: run as root (or install sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
