#!/usr/bin/env bash
# lookup_table on testdata/rules/lut.cu: the kernels it applies to (a byte
# image's window filter in the older style, a grid-stride gamma correction, a
# signed char sequence), compiled with NVRTC for sm_90 as the judge compiles
# them (rewrite --compile); the refusals with their reasons; and the children
# run on the CPU (emulated blocks, tests/tile_mm_cpu/emu.h) against the
# originals, bit for bit.
#
# usage: lookup_table.sh KERNELSMITH_CC TESTDATA
set -u
bin=$(realpath "$1") data=$(realpath "$2") here=$(dirname "$(realpath "$0")")
file=$data/rules/lut.cu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
for k in log_energy gamma_correct window_softscore; do
  "$bin" -q rewrite --no-compdb --compile $k --rule lookup_table "$file" >"$work/$k.cu" 2>"$work/err" ||
    { echo "lookup_table: $k:"; cat "$work/err"; fail=1; continue; }
  grep -qx "// kernelsmith-cc techniques: lookup_table=1" "$work/$k.cu" || { echo "lookup_table: $k: no tag"; fail=1; }
  grep -q "__shared__ float ks_lut\[256\];" "$work/$k.cu" || { echo "lookup_table: $k: no table"; fail=1; }
  grep -q "__syncthreads();" "$work/$k.cu" || { echo "lookup_table: $k: no barrier after the fill"; fail=1; }
  grep -q "ks_lut\[(unsigned char)(" "$work/$k.cu" || { echo "lookup_table: $k: no lookup"; fail=1; }
done
grep -q "const signed char ks_b = (signed char)ks_t;" "$work/window_softscore.cu" ||
  { echo "lookup_table: window_softscore: the entries are not made from signed chars"; fail=1; }
refuse() { # kernel reason
  if "$bin" -q rewrite --no-compdb $1 --rule lookup_table "$file" >/dev/null 2>"$work/err"; then
    echo "lookup_table: $1 was rewritten"; fail=1
  elif ! grep -qF "$2" "$work/err"; then
    echo "lookup_table: $1: expected '$2', got:"; cat "$work/err"; fail=1
  fi
}
refuse log_floats "logf(x[i + j]) reads no 8-bit value"
refuse log_per_thread "it depends on 'i', which is neither an 8-bit value nor a scalar parameter"
refuse log_once "no math function is called inside a loop"

cxx=${CXX:-g++}
printf '#include <barrier>\nint main() { std::barrier<> b(1); b.arrive_and_wait(); }\n' >"$work/probe.cpp"
if ! "$cxx" -std=c++20 -pthread "$work/probe.cpp" -o "$work/probe" 2>/dev/null; then
  echo "lookup_table: no C++20 compiler with <barrier> ($cxx); CPU runs skipped"
  exit $fail
fi
printf '#include "log_energy.cu"\n#include "gamma_correct.cu"\n#include "window_softscore.cu"\n' >"$work/v.h"
"$cxx" -std=c++20 -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -w -pthread \
  -I"$here/tile_mm_cpu" -I"$work" -DVARIANTS="\"v.h\"" -DLUT_CU="\"$file\"" \
  "$here/lookup_table_cpu/check.cpp" -o "$work/check" || { echo "lookup_table: the CPU check does not build"; exit 1; }
"$work/check" || fail=1
exit $fail
