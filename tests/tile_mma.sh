#!/usr/bin/env bash
# tile_mma on testdata/rules/tensor_mm.cu: every choice on the kernels it
# applies to (__half in two styles, bfloat16, float with a tolerance that
# allows TF32), compiled with NVRTC for sm_90 as the judge compiles them
# (rewrite --compile), with their launch, guards and WMMA calls; the
# refusals with their reasons (a tolerance too tight for TF32, no spec,
# products rounded to __half, a __half accumulator, double and integer
# operands, a scaled product, a parameter that is no choice); and its
# compositions with the rules that apply before and after it.
#
# usage: tile_mma.sh KERNELSMITH_CC TESTDATA
set -u
bin=$(realpath "$1") data=$(realpath "$2")
file=$data/rules/tensor_mm.cu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
choices=$("$bin" rewrite --list | awk '$1 == "tile_mma" { print $2 }' | tr ',' ' ')
[ -n "$choices" ] || { echo "tile_mma: not in rewrite --list"; exit 1; }

rewrite() { # out kernel rules...
  local out=$1 k=$2
  shift 2
  local args=()
  for r in "$@"; do args+=(--rule "$r"); done
  "$bin" -q rewrite --no-compdb --compile "$k" "${args[@]}" "$file" >"$out" 2>"$work/err"
}

# Each choice BM * 10^5 + BN * 100 + W on each kernel it applies to.
for p in $choices; do
  bm=$((p / 100000)) bn=$((p / 100 % 1000)) wp=$((p % 100))
  for k in hgemm_tidy_kernel hgemm_old_kernel bgemm_nt_kernel sgemm_tn_loose_kernel; do
    v=$work/${k}_$p.cu
    rewrite "$v" $k tile_mma=$p || { echo "tile_mma: $k $p:"; cat "$work/err"; fail=1; continue; }
    tag="tile_mma=${bm}x${bn}w$wp"
    [ $k = sgemm_tn_loose_kernel ] && tag="${tag}tf32"
    grep -qx "// kernelsmith-cc techniques: $tag" "$v" || { echo "tile_mma: $k $p: no technique $tag"; fail=1; }
    grep -qF "block = dim3(32, $wp)" "$v" || { echo "tile_mma: $k $p: no block 32x$wp"; fail=1; }
    grep -qF "ceil_div(grid_x * block_x, $bn), ceil_div(grid_y * block_y, $bm)" "$v" ||
      { echo "tile_mma: $k $p: no grid of ${bm}x$bn tiles"; fail=1; }
    grep -qF "requires ceil_div(grid_y * block_y, $bm) <= 65535" "$v" || { echo "tile_mma: $k $p: no grid_y guard"; fail=1; }
    grep -qx "#include <mma.h>" "$v" || { echo "tile_mma: $k $p: no #include <mma.h>"; fail=1; }
    for call in load_matrix_sync mma_sync store_matrix_sync __syncthreads __syncwarp; do
      grep -q "$call(" "$v" || { echo "tile_mma: $k $p: no $call"; fail=1; }
    done
  done
  # The guards that the original launch covered the bounds: parameters by
  # name, macros by their value.
  grep -qF "requires grid_x * block_x >= N" "$work/hgemm_tidy_kernel_$p.cu" || { echo "tile_mma: hgemm_tidy $p: no cover_x"; fail=1; }
  grep -qF "requires grid_y * block_y >= M" "$work/hgemm_tidy_kernel_$p.cu" || { echo "tile_mma: hgemm_tidy $p: no cover_y"; fail=1; }
  grep -qF "requires grid_x * block_x >= 150" "$work/hgemm_old_kernel_$p.cu" || { echo "tile_mma: hgemm_old $p: no cover_x"; fail=1; }
  grep -qF "requires grid_y * block_y >= 200" "$work/hgemm_old_kernel_$p.cu" || { echo "tile_mma: hgemm_old $p: no cover_y"; fail=1; }
  # The element types and the shapes of the fragments.
  grep -qF "matrix_a, 16, 16, 16, __half," "$work/hgemm_tidy_kernel_$p.cu" || { echo "tile_mma: hgemm_tidy $p: no __half m16n16k16"; fail=1; }
  grep -qF "matrix_a, 16, 16, 16, __half," "$work/hgemm_old_kernel_$p.cu" || { echo "tile_mma: hgemm_old $p: the typedef is not read as __half"; fail=1; }
  grep -qF "matrix_b, 16, 16, 16, __nv_bfloat16," "$work/bgemm_nt_kernel_$p.cu" || { echo "tile_mma: bgemm_nt $p: no bfloat16 m16n16k16"; fail=1; }
  grep -qF "matrix_a, 16, 16, 8, nvcuda::wmma::precision::tf32," "$work/sgemm_tn_loose_kernel_$p.cu" || { echo "tile_mma: sgemm_tn_loose $p: no tf32 m16n16k8"; fail=1; }
  grep -qF "nvcuda::wmma::__float_to_tf32(" "$work/sgemm_tn_loose_kernel_$p.cu" || { echo "tile_mma: sgemm_tn_loose $p: inputs not rounded to tf32"; fail=1; }
  # The user's code around the loop, replayed per output: C scaled once, in
  # the prologue, before its value starts the sum; the epilogue stores it.
  grep -qF "C[i * NJ + j] *= BETA;" "$work/hgemm_old_kernel_$p.cu" || { echo "tile_mma: hgemm_old $p: no prologue"; fail=1; }
  grep -qF "ks_sc[ks_warp][ks_e / 16][ks_e % 16] = C[i * NJ + j];" "$work/hgemm_old_kernel_$p.cu" ||
    { echo "tile_mma: hgemm_old $p: the start value is not staged"; fail=1; }
  grep -qF "C[i * NJ + j] = ks_sc[ks_warp][ks_e / 16][ks_e % 16];" "$work/hgemm_old_kernel_$p.cu" ||
    { echo "tile_mma: hgemm_old $p: the sum is not stored"; fail=1; }
  grep -qF "C[row * N + col] = alpha * acc + beta * C[row * N + col];" "$work/hgemm_tidy_kernel_$p.cu" ||
    { echo "tile_mma: hgemm_tidy $p: no epilogue"; fail=1; }
done

# Refusals, one reason each.
refuse() { # kernel reason [param]
  if "$bin" -q rewrite --no-compdb $1 --rule tile_mma${3:+=$3} "$file" >/dev/null 2>"$work/err"; then
    echo "tile_mma: $1 was rewritten"; fail=1
  elif ! grep -qF "$2" "$work/err"; then
    echo "tile_mma: $1: expected '$2', got:"; cat "$work/err"; fail=1
  fi
}
refuse sgemm_strict_kernel "its operands are float and output 'C' has tolerance atol 1e-05, rtol 0.0001: TF32 (10 mantissa bits, 2^-11 per rounded input) needs rtol >= 1e-2"
refuse sgemm_nospec_kernel "its operands are float and it has no spec: TF32 needs an output tolerance of rtol >= 1e-2, and none was given"
refuse hgemm_halfprod_kernel "it multiplies its __half operands in __half ('A[i * n + k] * B[k * n + j]' is rounded to __half before the sum"
refuse hgemm_halfacc_kernel "it accumulates in __half: tile_mma keeps float accumulators"
refuse dgemm_kernel "its operands are double: the tensor cores here take __half, __nv_bfloat16 or float (as TF32)"
refuse igemm_kernel "its operands are int: the tensor cores here take __half, __nv_bfloat16 or float (as TF32)"
refuse hgemm_scaled_kernel "its loop adds 'alpha * __half2float(A[i * n + k]) * __half2float(B[k * n + j])', not the product of its two operands alone"
# rewrite takes the listed choices only (the rule itself would refuse
# these: BM * 10^5 + BN * 100 + W, not the digits run together; 16 warps)
refuse hgemm_tidy_kernel "rule 'tile_mma' takes one of" 646404
refuse hgemm_tidy_kernel "rule 'tile_mma' takes one of" 6406416

# Compositions: rules before it (restrict's __ldg reads, unroll's pragma
# on the loop) and after it; each child compiles.
for k in hgemm_old_kernel bgemm_nt_kernel sgemm_tn_loose_kernel; do
  for r in restrict unroll; do
    rewrite "$work/c.cu" $k $r tile_mma || { echo "tile_mma: $r then tile_mma on $k:"; cat "$work/err"; fail=1; }
  done
done
for r in launch_bounds unroll restrict; do
  rewrite "$work/c.cu" hgemm_tidy_kernel tile_mma $r || { echo "tile_mma: tile_mma then $r:"; cat "$work/err"; fail=1; }
done
"$bin" -q rewrite --no-compdb hgemm_tidy_kernel --rule tile_mma --rule tile_matmul "$file" >/dev/null 2>"$work/err" &&
  { echo "tile_mma: tile_matmul applied after tile_mma"; fail=1; }

[ $fail = 0 ] && echo "tile_mma: all passed"
exit $fail
