#!/usr/bin/env bash
# split_cols on testdata/rules/split_cols.cu: every choice on the kernels it
# applies to, compiled with NVRTC for sm_90 (rewrite --compile); the
# refusals with their reasons; and the children run on the CPU (emulated
# blocks, tests/tile_mm_cpu/emu.h) against the originals, bit for bit
# (integer-valued inputs, so the reordered sums are exact).
#
# usage: split_cols.sh KERNELSMITH_CC TESTDATA
set -u
bin=$(realpath "$1") data=$(realpath "$2") here=$(dirname "$(realpath "$0")")
file=$data/rules/split_cols.cu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
choices=$("$bin" rewrite --list | awk '$1 == "split_cols" { print $2 }' | tr ',' ' ')
[ -n "$choices" ] || { echo "split_cols: not in rewrite --list"; exit 1; }
atomic_choices=
for p in $choices; do
  # G * 10000 + X * 100 + S: the split over blocks, for a sum straight
  # into y[j] alone (colsum_acc); the others say why not.
  kernels="colsum_tidy colsum_old colsum_acc"
  [ $p -ge 10000 ] && { kernels=colsum_acc; atomic_choices="$atomic_choices $p"; }
  for k in $kernels; do
    "$bin" -q rewrite --no-compdb --compile $k --rule split_cols=$p "$file" >"$work/${k}_$p.cu" 2>"$work/err" ||
      { echo "split_cols: $k $p:"; cat "$work/err"; fail=1; }
    x=$((p / 100 % 100)) s=$((p % 100)) g=$((p / 10000))
    grep -q "block = dim3($x, $s)" "$work/${k}_$p.cu" || { echo "split_cols: $k $p: no block ${x}x$s"; fail=1; }
    grep -q "__syncthreads();" "$work/${k}_$p.cu" || { echo "split_cols: $k $p: no barrier"; fail=1; }
    if [ $g -gt 0 ]; then
      grep -q "atomicAdd(&y\[j\], ks_sum);" "$work/${k}_$p.cu" || { echo "split_cols: $k $p: no atomicAdd"; fail=1; }
      grep -q "max(1, min($g, ceil_div(264, ceil_div(grid_x \* block_x, $x))))" "$work/${k}_$p.cu" ||
        { echo "split_cols: $k $p: no grid y of at most $g blocks"; cat "$work/${k}_$p.cu"; fail=1; }
    else
      grep -q atomicAdd "$work/${k}_$p.cu" && { echo "split_cols: $k $p: atomicAdd without G"; fail=1; }
    fi
  done
  grep -q "requires disjoint(y, A)" "$work/colsum_acc_$p.cu" || { echo "split_cols: colsum_acc $p: no disjoint guard"; fail=1; }
  [ $p -ge 10000 ] && continue
  grep -q "requires disjoint(y, A)" "$work/colsum_old_$p.cu" || { echo "split_cols: colsum_old $p: no disjoint guard"; fail=1; }
  grep -q "disjoint" "$work/colsum_tidy_$p.cu" && { echo "split_cols: colsum_tidy $p: a disjoint guard with restrict"; fail=1; }
done
[ -n "$atomic_choices" ] || { echo "split_cols: no choice splits over blocks"; fail=1; }
# refusals, one reason each
refuse() { # kernel reason
  if "$bin" -q rewrite --no-compdb $1 --rule split_cols "$file" >/dev/null 2>"$work/err"; then
    echo "split_cols: $1 was rewritten"; fail=1
  elif ! grep -qF "$2" "$work/err"; then
    echo "split_cols: $1: expected '$2', got:"; cat "$work/err"; fail=1
  fi
}
refuse two_outputs "it writes two buffers ('y' and 'z')"
refuse shifted "it writes 'y[j + 1]', which is not its output at the global index"
refuse ragged "its loop's count is not one value for every thread of a block"
refuse early "its loop ends early or skips (return)"
refuse atomic_out "its loop calls atomicAdd"
refuse two_d "it reads blockIdx outside the global index"
refuse uses_smem "it uses shared memory ('t')"
refuse rows "its loop reads 'a[j * m + i]', not a column"
# the split over blocks: only a sum straight into y[j]
a1=${atomic_choices# } a1=${a1%% *}
refuse_p() { # kernel param reason
  if "$bin" -q rewrite --no-compdb $1 --rule split_cols=$2 "$file" >/dev/null 2>"$work/err"; then
    echo "split_cols: $1 was rewritten with $2"; fail=1
  elif ! grep -qF "$3" "$work/err"; then
    echo "split_cols: $1 $2: expected '$3', got:"; cat "$work/err"; fail=1
  fi
}
refuse_p colsum_tidy $a1 "it sums into the local 'acc', not straight into y[j]: no split over blocks"
refuse_p colsum_old $a1 "it does more with y[j] than sum into it (y[j] = 0.0f;): no split over blocks"
# not a parameter of the rule
"$bin" -q rewrite --no-compdb colsum_tidy --rule split_cols=6432 "$file" >/dev/null 2>&1 &&
  { echo "split_cols: 64x32 (2048 threads) was accepted"; fail=1; }

cxx=${CXX:-g++}
printf '#include <barrier>\nint main() { std::barrier<> b(1); b.arrive_and_wait(); }\n' >"$work/probe.cpp"
if ! "$cxx" -std=c++20 -pthread "$work/probe.cpp" -o "$work/probe" 2>/dev/null; then
  echo "split_cols: no C++20 compiler with <barrier> ($cxx); CPU runs skipped"
  exit $fail
fi
for p in 3208 6404 3232 $a1; do
  if [ $p -ge 10000 ]; then
    printf '#include "colsum_acc_%s.cu"\n' $p >"$work/v_$p.h"
  else
    printf '#include "colsum_tidy_%s.cu"\n#include "colsum_old_%s.cu"\n#include "colsum_acc_%s.cu"\n' $p $p $p >"$work/v_$p.h"
  fi
  "$cxx" -std=c++20 -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -w -pthread \
    -I"$here/tile_mm_cpu" -I"$work" -DXOUT=$((p / 100 % 100)) -DSLICES=$((p % 100)) -DSLABS_MAX=$((p / 10000)) -DVARIANTS="\"v_$p.h\"" \
    -DSPLIT_COLS_CU="\"$file\"" "$here/split_cols_cpu/check.cpp" -o "$work/check_$p" ||
    { echo "split_cols: $p does not build"; fail=1; continue; }
  echo "== split_cols=$p"
  "$work/check_$p" || fail=1
done
exit $fail
