#!/usr/bin/env bash
# declare_index on testdata/rules/declare.cu: an index declared before it is
# set (C89: int i; ... i = blockIdx.x * blockDim.x + threadIdx.x;) is
# declared where it is set before a rule that reads it (coarsen here), the
# declaration keeping what else it declared; the variants compile with NVRTC
# for sm_90 (rewrite --compile); an index set again (before or after) or
# read before it is set stays, and the rule refuses the kernel as written,
# with its own reason.
#
# usage: declare_index.sh KERNELSMITH_CC TESTDATA
set -u
bin=$(realpath "$1") data=$(realpath "$2")
file=$data/rules/declare.cu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
for k in c89_saxpy c89_rowscale; do
  "$bin" -q rewrite --no-compdb --compile $k --rule coarsen=2 "$file" >"$work/$k.cu" 2>"$work/err" ||
    { echo "declare_index: $k:"; cat "$work/err"; fail=1; continue; }
  # the chain names the rule alone
  grep -qx "// kernelsmith-cc techniques: coarsen=2" "$work/$k.cu" || { echo "declare_index: $k: tag"; fail=1; }
  grep -q "int i = blockIdx.x \* blockDim.x + threadIdx.x + ks_k \* gridDim.x \* blockDim.x;" "$work/$k.cu" ||
    { echo "declare_index: $k: the index is not declared where it is set"; cat "$work/$k.cu"; fail=1; }
done
grep -q "int i;" "$work/c89_saxpy.cu" && { echo "declare_index: c89_saxpy: 'int i;' is left"; fail=1; }
grep -q "^    int k, half;$" "$work/c89_rowscale.cu" ||
  { echo "declare_index: c89_rowscale: the declaration lost what else it declared"; cat "$work/c89_rowscale.cu"; fail=1; }
for k in set_twice set_again read_first; do
  if "$bin" -q rewrite --no-compdb $k --rule coarsen=2 "$file" >/dev/null 2>"$work/err"; then
    echo "declare_index: $k was rewritten"; fail=1
  elif ! grep -qF "no global index blockIdx.x * blockDim.x + threadIdx.x declared at the kernel's top level" "$work/err"; then
    echo "declare_index: $k: expected coarsen's own reason, got:"; cat "$work/err"; fail=1
  fi
done
[ $fail = 0 ] && echo "declare_index: 2 kernels rewritten and compiled, 3 left as written"
exit $fail
