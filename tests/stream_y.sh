#!/usr/bin/env bash
# stream_y on testdata/rules/stream_y.cu: every choice on the kernels it
# applies to, diffed with testdata/rules/expected-stream_y/KERNEL.P.cu.txt
# (KS_UPDATE_GOLDEN=1 rewrites them) and compiled with NVRTC for sm_90
# (rewrite --compile); the refusals with their reasons; PolyBench's 2-D
# stencils where its sources are beside the project (KS_EXT, default
# TESTDATA/../.ext; skipped otherwise); and the children run on the CPU
# (emulated blocks, tests/tile_mm_cpu/emu.h) against the originals, bit for
# bit, on sizes that are not multiples of the run.
#
# usage: stream_y.sh KERNELSMITH_CC TESTDATA
set -u
bin=$(realpath "$1") data=$(realpath "$2") here=$(dirname "$(realpath "$0")")
file=$data/rules/stream_y.cu expected=$data/rules/expected-stream_y
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
choices=$("$bin" rewrite --list | awk '$1 == "stream_y" { print $2 }' | tr ',' ' ')
[ -n "$choices" ] || { echo "stream_y: not in rewrite --list"; exit 1; }
kernels="jacobi2d_tidy conv2d_old wide_y cols_loop"
for p in $choices; do
  for k in $kernels; do
    out=$work/${k}_$p.cu
    "$bin" -q rewrite --no-compdb --compile $k --rule stream_y=$p "$file" >"$out" 2>"$work/err" ||
      { echo "stream_y: $k $p:"; cat "$work/err"; fail=1; continue; }
    if [ "${KS_UPDATE_GOLDEN:-}" = 1 ]; then
      mkdir -p "$expected"
      cp "$out" "$expected/$k.$p.cu.txt"
    fi
    diff -u "$expected/$k.$p.cu.txt" "$out" || { echo "FAIL: stream_y golden $k $p"; fail=1; }
  done
  has() { grep -qF -- "$2" "$work/${1}_$p.cu" || { echo "stream_y: $1 $p: no '$2'"; fail=1; }; }
  has jacobi2d_tidy "techniques: stream_y=$p"
  # the launch: y divided by the run (2-D grid) or made of runs (the loop)
  has jacobi2d_tidy "launch grid = dim3(grid_x, ceil_div(grid_y, $p), grid_z)"
  has cols_loop "launch grid = dim3(grid_x, max(ceil_div((ny - 1) - 1, $p), 1), grid_z)"
  has cols_loop "requires grid_y * block_y == 1"
  has jacobi2d_tidy "requires grid_y * block_y >= (ny - 1)"
  has conv2d_old "requires grid_y * block_y >= 44"
  has conv2d_old "requires disjoint(B, A)"
  has wide_y "requires disjoint(b, w)"
  grep -q "disjoint" "$work/jacobi2d_tidy_$p.cu" && { echo "stream_y: jacobi2d_tidy $p: a disjoint guard with restrict"; fail=1; }
  # each column value is loaded once: the newest row in the loop, the
  # others before it; the centre and the y neighbours no longer read there
  has jacobi2d_tidy "ks_in_p1 = in[idx + nx];"
  [ "$(grep -c 'in\[idx - nx\]\|in\[idx\]' "$work/jacobi2d_tidy_$p.cu")" = 2 ] ||
    { echo "stream_y: $p: the column is read more than once"; fail=1; }
  # the convolution's three columns, nine reads: three loads per row
  [ "$(grep -c '= A\[' "$work/conv2d_old_$p.cu")" = 9 ] || { echo "stream_y: conv2d_old $p: not nine loads"; fail=1; }
  has conv2d_old "ks_A_p1_m1 = A[(i + 1) * NJ + (j - 1)];"
  # the output read at its own element stays a load
  has wide_y "b[at] = b[at] - ks_w_0"
done
# refusals, one reason each
refuse() { # kernel reason [file]
  if (cd "$(dirname "${3:-$file}")" && "$bin" -q rewrite --no-compdb $1 --rule stream_y "${3:-$file}") >/dev/null 2>"$work/err"; then
    echo "stream_y: $1 was rewritten"; fail=1
  elif ! grep -qF "$2" "$work/err"; then
    echo "stream_y: $1: expected '$2', got:"; cat "$work/err"; fail=1
  fi
}
refuse in_place_y "it reads 'a', which it writes"
refuse row_only "it reads no buffer at its own x on two neighbouring rows ('a' only at y+0): nothing to keep in registers"
refuse y_branch "its work per row is not straight-line code (it has 'if (y == 0)"
refuse heat3d_tidy "it is a 3-D kernel (its z index 'z'): stream_z walks it along z" "$data/rules/stream_z.cu"
"$bin" -q rewrite --no-compdb jacobi2d_tidy --rule stream_y=0 "$file" >/dev/null 2>"$work/err" &&
  { echo "stream_y: a run of all rows was accepted"; fail=1; }
grep -qF "takes one of 8,4,16,32, not '0'" "$work/err" ||
  { echo "stream_y: 0:"; cat "$work/err"; fail=1; }
# its own output no longer has the pattern
for k in jacobi2d_tidy cols_loop; do
  "$bin" -q rewrite --no-compdb $k --rule stream_y=8 --rule stream_y=8 "$file" >/dev/null 2>"$work/err" &&
    { echo "stream_y: $k applied twice"; fail=1; }
  grep -q "reads blockIdx outside the global index" "$work/err" || { echo "stream_y: $k twice:"; cat "$work/err"; fail=1; }
done

# PolyBench/GPU's 2-D stencils: jacobi's first kernel, the convolution and
# fdtd's third step are streamed (and compile); the others say why not
pb=${KS_EXT:-$data/../.ext}/polybench/CUDA
if [ -f "$pb/stencils/jacobi-2d-imper/jacobi2D.cu" ]; then
  for d in jacobi-2d-imper convolution-2d fdtd-2d; do
    mkdir -p "$work/pb/$d"
    cp "$pb/stencils/$d/"*.cu "$pb/stencils/$d/"*.cuh "$pb/utilities/"*.h "$work/pb/$d/"
  done
  applies() { # kernel file
    (cd "$(dirname "$2")" && "$bin" -q rewrite --no-compdb --compile $1 --rule stream_y=8 "$2") >"$work/pb.out" 2>"$work/err" ||
      { echo "stream_y: PolyBench $1:"; cat "$work/err"; fail=1; }
  }
  applies runJacobiCUDA_kernel1 "$work/pb/jacobi-2d-imper/jacobi2D.cu"
  grep -qF "ks_A_p1 = A[(1 + i)*N + j];" "$work/pb.out" || { echo "stream_y: PolyBench jacobi: no streamed load"; fail=1; }
  applies convolution2D_kernel "$work/pb/convolution-2d/2DConvolution.cu"
  grep -qF "requires grid_y * block_y >= (ni - 1)" "$work/pb.out" || { echo "stream_y: PolyBench convolution: no coverage guard"; fail=1; }
  applies fdtd_step3_kernel "$work/pb/fdtd-2d/fdtd2d.cu"
  grep -qF "requires disjoint(hz, ey)" "$work/pb.out" || { echo "stream_y: PolyBench fdtd_step3: no disjoint guard"; fail=1; }
  refuse runJacobiCUDA_kernel2 "it reads no buffer at its own x on two neighbouring rows ('B' only at i+0)" "$work/pb/jacobi-2d-imper/jacobi2D.cu"
  refuse fdtd_step1_kernel "its work per row is not straight-line code (it has 'if (i == 0)" "$work/pb/fdtd-2d/fdtd2d.cu"
  refuse fdtd_step2_kernel "it reads no buffer at its own x on two neighbouring rows ('hz' only at i+0)" "$work/pb/fdtd-2d/fdtd2d.cu"
else
  echo "stream_y: no PolyBench sources under $pb; its kernels skipped"
fi

cxx=${CXX:-g++}
printf '#include <barrier>\nint main() { std::barrier<> b(1); b.arrive_and_wait(); }\n' >"$work/probe.cpp"
if ! "$cxx" -std=c++20 -pthread "$work/probe.cpp" -o "$work/probe" 2>/dev/null; then
  echo "stream_y: no C++20 compiler with <barrier> ($cxx); CPU runs skipped"
  exit $fail
fi
for p in $choices; do
  for k in $kernels; do printf '#include "%s_%s.cu"\n' $k $p; done >"$work/v_$p.h"
  "$cxx" -std=c++20 -O1 -ffp-contract=off -fsanitize=address,undefined -fno-sanitize-recover=all -w -pthread \
    -I"$here/tile_mm_cpu" -I"$work" -DRUN=$p -DVARIANTS="\"v_$p.h\"" \
    -DSTREAM_Y_CU="\"$file\"" "$here/stream_y_cpu/check.cpp" -o "$work/check_$p" ||
    { echo "stream_y: $p does not build"; fail=1; continue; }
  echo "== stream_y=$p"
  "$work/check_$p" || fail=1
done
exit $fail
