#!/usr/bin/env bash
# tile_matmul's children computed on the CPU and compared bit for bit with
# the originals: each choice of the rule applied to the sgemm app and to the
# kernels of testdata/rules/tile_mm.cu, the CUDA built-ins emulated by
# tests/tile_mm_cpu/emu.h (a block's threads as threads, __syncthreads a
# barrier, blocks one after the other), under AddressSanitizer so that a
# load outside a buffer fails too, with -ffp-contract=off on both sides.
# Skips (77) without a C++20 compiler that has <barrier>.
#
# usage: tile_mm_cpu.sh KERNELSMITH_CC TESTDATA
set -u
bin=$(realpath "$1") data=$(realpath "$2") here=$(dirname "$(realpath "$0")")/tile_mm_cpu
cxx=${CXX:-g++}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '#include <barrier>\nint main() { std::barrier<> b(1); b.arrive_and_wait(); }\n' >"$work/probe.cpp"
"$cxx" -std=c++20 -pthread "$work/probe.cpp" -o "$work/probe" 2>/dev/null || {
  echo "tile_mm_cpu: no C++20 compiler with <barrier> ($cxx); skipped"; exit 77; }
sed -n '/^__global__ void sgemm_naive_kernel/,/^}/p' "$data/apps/sgemm/sgemm.cu" >"$work/sgemm_orig.cu"
# Four of the choices by default (R = 4, 2 and 1, and a 4 x 4 register
# tile; each block's threads are real threads, so every choice costs a
# minute on a small machine);
# KS_TILE_CHOICES="..." or "all" for others, "none" for none (the float4
# choices run first, see below).
choices=${KS_TILE_CHOICES:-3204 1602 32 320404}
[ "$choices" = none ] && choices=
[ "$choices" = all ] && choices=$("$bin" rewrite --list | awk '$1 == "tile_matmul" { print $2 }' | tr ',' ' ')
fail=0
# The float4 choices (BM * 10^7 + BN * 10^4 + BK * 100 + R * 10 + Rx) on
# the float kernels whose leading dimensions can be multiples of 4: sgemm,
# A * B^T and A^T * B (check.cpp's FAST sizes: odd M, N, K, padded leading
# dimensions). By default all of them; KS_TILE_FAST="..." for others, "" for none.
fast=${KS_TILE_FAST-1281280888 1280640884 1281281688 640640844}
[ "$choices" = "$(echo $fast)" ] && choices=
for p in $fast; do
  bm=$((p / 10000000)) bn=$((p / 10000 % 1000)) r=$((p / 10 % 10)) x=$((p % 10))
  : >"$work/v_$p.h"
  "$bin" -q rewrite --no-compdb sgemm_naive_kernel --rule tile_matmul=$p "$data/apps/sgemm" \
    >"$work/sgemm_$p.cu" || { echo "tile_mm_cpu: sgemm $p did not rewrite"; fail=1; continue; }
  echo "#include \"sgemm_$p.cu\"" >>"$work/v_$p.h"
  for k in gemm_nt_kernel gemm_tn_kernel; do
    "$bin" -q rewrite --no-compdb $k --rule tile_matmul=$p "$data/rules/tile_mm.cu" >"$work/${k}_$p.cu" ||
      { echo "tile_mm_cpu: $k $p did not rewrite"; fail=1; continue 2; }
    echo "#include \"${k}_$p.cu\"" >>"$work/v_$p.h"
  done
  "$cxx" -std=c++20 -O1 -ffp-contract=off -fno-strict-aliasing -fsanitize=address,undefined \
    -fno-sanitize-recover=all -w -pthread -I"$here" -I"$work" -DFAST -DTILE=$bm -DTILE_X=$bn \
    -DREGS=$r -DXREGS=$x -DVARIANTS="\"v_$p.h\"" -DTILE_MM_CU="\"$data/rules/tile_mm.cu\"" \
    -DSGEMM_ORIG="\"sgemm_orig.cu\"" "$here/check.cpp" -o "$work/check_$p" ||
    { echo "tile_mm_cpu: $p does not build"; fail=1; continue; }
  echo "== tile_matmul=$p"
  "$work/check_$p" || fail=1
done
for p in $choices; do
  [ "$p" -ge 100000000 ] && continue # done above
  t=$((p >= 10000 ? p / 10000 : p >= 100 ? p / 100 : p))
  r=$((p >= 10000 ? p / 100 % 100 : p >= 100 ? p % 100 : 1)) x=$((p >= 10000 ? p % 100 : 1))
  : >"$work/v_$p.h"
  "$bin" -q rewrite --no-compdb sgemm_naive_kernel --rule tile_matmul=$p "$data/apps/sgemm" \
    >"$work/sgemm_$p.cu" || { echo "tile_mm_cpu: sgemm $p did not rewrite"; fail=1; continue; }
  echo "#include \"sgemm_$p.cu\"" >>"$work/v_$p.h"
  for k in gemm_macro_kernel aat_kernel gemm_nt_kernel; do
    "$bin" -q rewrite --no-compdb $k --rule tile_matmul=$p "$data/rules/tile_mm.cu" >"$work/${k}_$p.cu" ||
      { echo "tile_mm_cpu: $k $p did not rewrite"; fail=1; continue 2; }
    echo "#include \"${k}_$p.cu\"" >>"$work/v_$p.h"
  done
  "$cxx" -std=c++20 -O1 -ffp-contract=off -fsanitize=address,undefined -fno-sanitize-recover=all -w \
    -pthread -I"$here" -I"$work" -DTILE=$t -DREGS=$r -DXREGS=$x -DVARIANTS="\"v_$p.h\"" \
    -DTILE_MM_CU="\"$data/rules/tile_mm.cu\"" -DSGEMM_ORIG="\"sgemm_orig.cu\"" \
    "$here/check.cpp" -o "$work/check_$p" || { echo "tile_mm_cpu: $p does not build"; fail=1; continue; }
  echo "== tile_matmul=$p"
  "$work/check_$p" || fail=1
done
exit $fail
