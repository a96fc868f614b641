#!/usr/bin/env bash
# Installs what kernelsmith-cc needs from Debian's packages (only what is
# missing), checks for the CUDA toolkit, and builds into BUILD_DIR.
#
#   scripts/setup.sh [release|test]
#
# release (default): optimized build in build/
# test:              sanitizers (ASan, UBSan) and tests in build-test/
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-release}
packages=(build-essential cmake pkg-config git python3 patch ccache
          libclang-16-dev libcjson-dev libpcre2-dev libcurl4-openssl-dev
          libsqlite3-dev libcmocka-dev libssl-dev libiberty-dev zlib1g-dev
          libopenmpi-dev openmpi-bin)

say() { printf 'setup: %s\n' "$*" >&2; }

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { say "need root or sudo to install: ${missing[*]}"; exit 1; }
    sudo=sudo
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda/include/cuda.h" ] || [ ! -e "$cuda/bin/nvcc" ]; then
  say "no CUDA toolkit at $cuda: install NVIDIA's CUDA toolkit (12.x or 13.x) there, or set CUDA_HOME to where it is."
  exit 1
fi
export CUDA_HOME=$cuda
export PATH="$cuda/bin:$PATH"

jobs=$(nproc 2>/dev/null || echo 2)
case "$mode" in
  release)
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKS_BUILD_TESTS=OFF >/dev/null
    cmake --build build -j"$jobs" >/dev/null
    say "built build/cli/kernelsmith-cc"
    ;;
  test)
    cmake -S . -B build-test -DCMAKE_BUILD_TYPE=Debug -DKS_SANITIZE=ON -DKS_BUILD_TESTS=ON >/dev/null
    cmake --build build-test -j"$jobs"
    say "built build-test (sanitizers on)"
    ;;
  *)
    say "unknown mode '$mode' (release or test)"
    exit 2
    ;;
esac
