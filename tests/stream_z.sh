#!/usr/bin/env bash
# stream_z on testdata/rules/stream_z.cu: every choice on the kernels it
# applies to, diffed with testdata/rules/expected-stream_z/KERNEL.P.cu.txt
# (KS_UPDATE_GOLDEN=1 rewrites them) and compiled with NVRTC for sm_90
# (rewrite --compile); the refusals with their reasons; PolyBench's 3-D
# kernel where its sources are beside the project (KS_EXT, default
# TESTDATA/../.ext; skipped otherwise); and the children run on the CPU
# (emulated blocks, tests/tile_mm_cpu/emu.h) against the originals, bit for
# bit, on sizes that are not multiples of the run.
#
# usage: stream_z.sh KERNELSMITH_CC TESTDATA
set -u
bin=$(realpath "$1") data=$(realpath "$2") here=$(dirname "$(realpath "$0")")
file=$data/rules/stream_z.cu expected=$data/rules/expected-stream_z
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
choices=$("$bin" rewrite --list | awk '$1 == "stream_z" { print $2 }' | tr ',' ' ')
[ -n "$choices" ] || { echo "stream_z: not in rewrite --list"; exit 1; }
for p in $choices; do
  for k in heat3d_tidy jacobi3d_old wide_z; do
    out=$work/${k}_$p.cu
    "$bin" -q rewrite --no-compdb --compile $k --rule stream_z=$p "$file" >"$out" 2>"$work/err" ||
      { echo "stream_z: $k $p:"; cat "$work/err"; fail=1; continue; }
    if [ "${KS_UPDATE_GOLDEN:-}" = 1 ]; then
      mkdir -p "$expected"
      cp "$out" "$expected/$k.$p.cu.txt"
    fi
    diff -u "$expected/$k.$p.cu.txt" "$out" || { echo "FAIL: stream_z golden $k $p"; fail=1; }
  done
  tag=$([ "$p" = 0 ] && echo all || echo "$p")
  grep -q "techniques: stream_z=$tag" "$work/heat3d_tidy_$p.cu" || { echo "stream_z: $p: no tag stream_z=$tag"; fail=1; }
  # the launch: z divided by the run (3-D grid) or made of runs (the loop)
  if [ "$p" = 0 ]; then
    # one run of every plane: grid z 1 (the block's z is 1 at the site)
    grep -q "launch grid = dim3(grid_x, grid_y)$" "$work/heat3d_tidy_$p.cu" || { echo "stream_z: all: grid z is not 1"; fail=1; }
    grep -q "launch" "$work/jacobi3d_old_$p.cu" && { echo "stream_z: all: the loop's launch changed"; fail=1; }
  else
    grep -q "ceil_div(grid_z, $p))" "$work/heat3d_tidy_$p.cu" || { echo "stream_z: $p: grid z not divided"; fail=1; }
    grep -q "max(ceil_div(26 - 1, $p), 1)" "$work/jacobi3d_old_$p.cu" || { echo "stream_z: $p: the loop's runs are not the grid's z"; fail=1; }
  fi
  grep -q "requires grid_z \* block_z >= (nz - 1)" "$work/heat3d_tidy_$p.cu" || { echo "stream_z: $p: no coverage guard"; fail=1; }
  grep -q "requires disjoint(B, A)" "$work/jacobi3d_old_$p.cu" || { echo "stream_z: jacobi3d_old $p: no disjoint guard"; fail=1; }
  grep -q "disjoint" "$work/heat3d_tidy_$p.cu" && { echo "stream_z: heat3d_tidy $p: a disjoint guard with restrict"; fail=1; }
  # each column value is loaded once: the newest plane in the loop, the
  # others before it; the centre and the z neighbours no longer read there
  grep -q "ks_in_p1 = in\[idx + plane\];" "$work/heat3d_tidy_$p.cu" || { echo "stream_z: $p: no streamed load"; fail=1; }
  [ "$(grep -c 'in\[idx - plane\]\|in\[idx\]' "$work/heat3d_tidy_$p.cu")" = 2 ] ||
    { echo "stream_z: $p: the column is read more than once"; fail=1; }
done
# refusals, one reason each
refuse() { # kernel reason [file]
  if (cd "$(dirname "${3:-$file}")" && "$bin" -q rewrite --no-compdb $1 --rule stream_z "${3:-$file}") >/dev/null 2>"$work/err"; then
    echo "stream_z: $1 was rewritten"; fail=1
  elif ! grep -qF "$2" "$work/err"; then
    echo "stream_z: $1: expected '$2', got:"; cat "$work/err"; fail=1
  fi
}
refuse in_place "it reads 'a', which it writes"
refuse plane_only "it reads no buffer at its own (x, y) on another z plane: nothing to keep in registers"
refuse z_branch "its work per z plane is not straight-line code (it has 'if (z == 1)"
refuse plane_param "it has no z index 'blockIdx.z * blockDim.z + threadIdx.z' and no loop (over z) after its x/y bounds check"
"$bin" -q rewrite --no-compdb heat3d_tidy --rule stream_z=5 "$file" >/dev/null 2>&1 &&
  { echo "stream_z: a run of 5 was accepted"; fail=1; }
# its own output no longer has the pattern
"$bin" -q rewrite --no-compdb heat3d_tidy --rule stream_z=8 --rule stream_z=8 "$file" >/dev/null 2>"$work/err" &&
  { echo "stream_z: applied twice"; fail=1; }
grep -q "reads blockIdx outside the global index" "$work/err" || { echo "stream_z: twice:"; cat "$work/err"; fail=1; }

# PolyBench/GPU's convolution-3d: one launch per plane, the plane a
# parameter; the rule cannot see the host's loop and says so
pb=${KS_EXT:-$data/../.ext}/polybench/CUDA
if [ -f "$pb/stencils/convolution-3d/3DConvolution.cu" ]; then
  mkdir -p "$work/pb"
  cp "$pb/stencils/convolution-3d/"*.cu "$pb/stencils/convolution-3d/"*.cuh "$pb/utilities/"*.h "$work/pb/"
  refuse convolution3D_kernel "it has no z index 'blockIdx.z * blockDim.z + threadIdx.z' and no loop (over z)" "$work/pb/3DConvolution.cu"
else
  echo "stream_z: no PolyBench sources under $pb; its kernel skipped"
fi

cxx=${CXX:-g++}
printf '#include <barrier>\nint main() { std::barrier<> b(1); b.arrive_and_wait(); }\n' >"$work/probe.cpp"
if ! "$cxx" -std=c++20 -pthread "$work/probe.cpp" -o "$work/probe" 2>/dev/null; then
  echo "stream_z: no C++20 compiler with <barrier> ($cxx); CPU runs skipped"
  exit $fail
fi
for p in $choices; do
  printf '#include "heat3d_tidy_%s.cu"\n#include "jacobi3d_old_%s.cu"\n#include "wide_z_%s.cu"\n' $p $p $p >"$work/v_$p.h"
  "$cxx" -std=c++20 -O1 -ffp-contract=off -fsanitize=address,undefined -fno-sanitize-recover=all -w -pthread \
    -I"$here/tile_mm_cpu" -I"$work" -DRUN=$p -DVARIANTS="\"v_$p.h\"" \
    -DSTREAM_Z_CU="\"$file\"" "$here/stream_z_cpu/check.cpp" -o "$work/check_$p" ||
    { echo "stream_z: $p does not build"; fail=1; continue; }
  echo "== stream_z=$p"
  "$work/check_$p" || fail=1
done
exit $fail
