#!/usr/bin/env bash
# Runs every compiled test app; each must print "<app>: PASS". Exit 77
# (skipped) where there is no NVIDIA GPU.
set -u
dir=$1
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
exit $fail
