#!/usr/bin/env bash
# Golden tests for extract: the slice of a few representative kernels (a
# header kernel in namespaces, a macro-generated kernel, a template with
# toolkit headers, what testdata/slice/features.cu carries) diffed against
# testdata/slice/expected/<kernel>.cu.txt (not .cu: a scan of testdata must
# not find them), with the testdata path replaced by
# TESTDATA so the files do not depend on where the tree is.
# KS_UPDATE_GOLDEN=1 rewrites them.
set -u
bin=$(realpath "$1") data=$(realpath "$2")
pass=0 fail=0
run_case() { # expected-name dir source kernel args...
  local name=$1 dir=$2 src=$3 kernel=$4; shift 4
  local expected=$data/slice/expected/$name.cu.txt actual
  actual=$(cd "$data/$dir" && "$bin" --color=never -q extract --no-compdb "$@" "$kernel" "$src" 2>&1 |
    sed "s|$data|TESTDATA|g")
  if [ "${KS_UPDATE_GOLDEN:-}" = 1 ]; then
    printf '%s\n' "$actual" >"$expected"
  fi
  if diff -u "$expected" <(printf '%s\n' "$actual"); then
    pass=$((pass + 1))
  else
    echo "FAIL: $name"
    fail=$((fail + 1))
  fi
}
run_case relu6 frontend headers.cu relu6
run_case square frontend macros.cu square
run_case row_sum_bf16 frontend system_headers.cu row_sum_bf16
run_case features_kernel slice features.cu features_kernel -DFEATURE_SCALE=2.0f
run_case calls_host slice unsliceable.cu calls_host
echo "golden_slice: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
