#!/usr/bin/env bash
# tile_mma judged on the GPU: the first choice's child of each kernel of
# testdata/rules/tensor_mm.cu it applies to that has a spec (__half,
# bfloat16, float with a TF32 tolerance) goes through `check`, which runs
# the original and the variant on every size set (odd ones included), with
# poisoned outputs, guard zones and a second run; the verdict must be FAST,
# SAME or SLOW, never WRONG or anything else. Exit 77 (skipped) where there
# is no NVIDIA GPU.
#
# usage: tile_mma_gpu.sh KERNELSMITH_CC TESTDATA
set -u
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU"
  exit 77
fi
bin=$(realpath "$1") data=$(realpath "$2")
file=$data/rules/tensor_mm.cu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
fail=0
for k in hgemm_tidy_kernel bgemm_nt_kernel sgemm_tn_loose_kernel; do
  if ! "$bin" -q rewrite --no-compdb $k --rule tile_mma "$file" >"$k.cu" 2>"$k.err"; then
    echo "FAIL: $k: no tile_mma child"; cat "$k.err"; fail=1; continue
  fi
  out=$("$bin" check $k --variant "$k.cu" --no-compdb --max-seconds 2 "$file" 2>&1)
  verdict=$(grep -oE '\b(FAST|SAME|SLOW|WRONG|SUSPICIOUS|REFUSED|COMPILE_ERROR|CRASH|TIMEOUT|INAPPLICABLE)\b' <<<"$out" | head -1)
  case "$verdict" in
    FAST|SAME|SLOW) echo "$k: $(head -1 "$k.cu" | sed 's|// kernelsmith-cc techniques: ||'): $verdict" ;;
    *) echo "FAIL: $k: ${verdict:-no verdict}"; echo "$out" | tail -15; fail=1 ;;
  esac
done
exit $fail
