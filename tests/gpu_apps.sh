#!/usr/bin/env bash
# Runs every compiled test app; each must print "<app>: PASS". With a second
# directory, also runs the legacy-style programs (testdata/legacy) built
# there; the last line of each must be exactly "<app>: PASS". Exit 77
# (skipped) where there is no NVIDIA GPU.
set -u
dir=$1 legacy=${2:-}
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU"
  exit 77
fi
fail=0
for app in saxpy gelu reduce_sum softmax layernorm transpose sgemm stencil2d histogram \
           prefix_sum spmv_csr gemv; do
  if ! out=$("$dir/$app" 2>&1) || ! grep -q "^$app: PASS" <<<"$out"; then
    echo "FAIL: $app"
    echo "$out" | tail -5
    fail=1
  else
    grep "^$app:" <<<"$out"
  fi
done
if [ -n "$legacy" ]; then
  for app in gemm mvt atax jacobi2d conv2d covariance fdtd2d; do
    if ! out=$("$legacy/$app" 2>&1) || [ "$(tail -n 1 <<<"$out")" != "$app: PASS" ]; then
      echo "FAIL: legacy $app"
      echo "$out" | tail -5
      fail=1
    else
      echo "legacy $(tail -n 1 <<<"$out")"
    fi
  done
fi
exit $fail
