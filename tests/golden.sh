#!/usr/bin/env bash
# Golden tests for scan: each case's `scan --long` output is diffed against
# testdata/<dir>/expected/<case>.txt. KS_UPDATE_GOLDEN=1 rewrites them.
set -u
bin=$(realpath "$1") data=$(realpath "$2")
pass=0 fail=0
run_case() { # name dir args...
  local name=$1 dir=$2; shift 2
  local expected=$data/$dir/expected/$name.txt actual
  actual=$(cd "$data/$dir" && "$bin" --color=never -q scan --long --no-compdb "$@" 2>/dev/null)
  if [ "${KS_UPDATE_GOLDEN:-}" = 1 ]; then
    mkdir -p "$(dirname "$expected")"
    printf '%s\n' "$actual" >"$expected"
  fi
  if diff -u "$expected" <(printf '%s\n' "$actual"); then
    pass=$((pass + 1))
  else
    echo "FAIL: $dir/$name"
    fail=$((fail + 1))
  fi
}
for f in "$data"/frontend/*.cu; do
  case_name=$(basename "$f" .cu)
  [ "$case_name" = included_impl ] && continue # covered by unity
  run_case "$case_name" frontend "$case_name.cu"
done
run_case all frontend .
run_case apps apps .
run_case legacy legacy .
echo "golden: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
