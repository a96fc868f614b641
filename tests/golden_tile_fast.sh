#!/usr/bin/env bash
# Golden tests of tile_matmul's float4 choices (BM * 10^7 + BN * 10^4 + BK *
# 100 + R * 10 + Rx), which golden_rules.sh never prints (it takes a rule's
# first choice that applies): each choice on the sgemm app, on A * B^T and
# A^T * B of testdata/rules/tile_mm.cu and on PolyBench's gemm of
# testdata/legacy (no spec), made with `rewrite --compile` (so NVRTC
# compiles every child) and diffed with
# testdata/rules/expected-tile/KERNEL.tile_matmul=PARAM.cu.txt.
#
#   KS_UPDATE_GOLDEN=1   rewrite the expected files instead of failing
#
# usage: golden_tile_fast.sh KERNELSMITH_CC TESTDATA
set -u
bin=$(realpath "$1") data=$(realpath "$2")
expected_dir=$data/rules/expected-tile
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
choices="1281280888 1280640884 1281281688 640640844"
# kernel, directory to run in, path given to rewrite there
subjects="sgemm_naive_kernel $data/apps sgemm
gemm_nt_kernel $data/rules tile_mm.cu
gemm_tn_kernel $data/rules tile_mm.cu
gemm_kernel $data/legacy gemm"
pass=0 fail=0
while read -r kernel dir path; do
  for p in $choices; do
    name=$kernel.tile_matmul=$p.cu.txt
    if ! (cd "$dir" && "$bin" --color=never -q rewrite --no-compdb --compile "$kernel" \
            --rule tile_matmul=$p "$path") >"$work/$name" 2>"$work/$name.err"; then
      echo "golden_tile_fast: $kernel tile_matmul=$p failed:"; cat "$work/$name.err"
      fail=$((fail + 1)); continue
    fi
    if [ "${KS_UPDATE_GOLDEN:-}" = 1 ]; then
      mkdir -p "$expected_dir"
      cp "$work/$name" "$expected_dir/$name"
    fi
    if [ -f "$expected_dir/$name" ] && diff -u "$expected_dir/$name" "$work/$name"; then
      pass=$((pass + 1))
    else
      echo "golden_tile_fast: $name differs (or is missing)"; fail=$((fail + 1))
    fi
  done
done <<<"$subjects"
echo "golden_tile_fast: $pass passed, $fail failed"
[ "$fail" = 0 ]
