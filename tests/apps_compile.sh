#!/usr/bin/env bash
# Compiles every CUDA program of a CMake project (testdata/apps or
# testdata/legacy, the first argument) with nvcc for sm_90.
# Exit 77 (skipped) when there is no nvcc.
set -eu
src=$1 out=$2
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
command -v "$nvcc" >/dev/null 2>&1 || nvcc=$(command -v nvcc || true)
if [ -z "$nvcc" ] || [ ! -x "$nvcc" ]; then
  echo "SKIP: no nvcc"
  exit 77
fi
cmake -S "$src" -B "$out" -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$out" -j"$(nproc 2>/dev/null || echo 2)"
