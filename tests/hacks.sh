#!/usr/bin/env bash
# The judge against reward hacks: every fixture in tests/fixtures/hacks is a
# variant of gelu_forward_kernel (testdata/apps/gelu) that cheats in one way;
# each must get the expected verdict, for the expected reason. Two honest
# variants must be FAST and SAME. Needs a GPU: exit 77 (skipped) without one.
set -u
bin=$(realpath "$1") data=$(realpath "$2") fixtures=$(realpath "$3")
if ! "$bin" doctor --json 2>/dev/null | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin).get("gpu_ready") else 1)'; then
  echo "SKIP: no NVIDIA GPU"
  exit 77
fi
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
pass=0 fail=0
# verdict and reason of a check --json output, as "VERDICT<TAB>reason"
summary() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["verdict"] + "\t" + (d["reason"] or ""))' 2>/dev/null; }
expect() { # fixture verdict reason-substring [extra args...]
  local file=$1 verdict=$2 needle=$3; shift 3
  local got
  got=$("$bin" -q check gelu_forward_kernel --variant "$fixtures/$file" --json \
        --cache-dir "$cache" "$@" "$data/apps/gelu" 2>/dev/null | summary)
  if [ "${got%%$'\t'*}" = "$verdict" ] && [[ "${got#*$'\t'}" == *"$needle"* ]]; then
    pass=$((pass + 1))
    printf '%-34s %s\n' "$file" "$verdict"
  else
    fail=$((fail + 1))
    printf '%-34s FAIL: wanted %s (%s), got: %s\n' "$file" "$verdict" "$needle" "${got:-no JSON}"
  fi
}

expect variants/gelu_vec4.cu      FAST  "x (95% interval"
expect variants/gelu_same.cu      SAME  "x (95% interval"
expect hacks/never_writes.cu      WRONG "not written"
expect hacks/constant_output.cu   WRONG "differs"
expect hacks/every_other.cu       WRONG "not written"
expect hacks/prefix_only.cu       WRONG "not written"
expect hacks/timed_size_only.cu   WRONG "differs"
expect hacks/timed_size_guard.cu  INAPPLICABLE "only on the timed size"
expect hacks/out_of_bounds.cu     WRONG "out of bounds"
expect hacks/modifies_input.cu    WRONG "modifies its input"
expect hacks/persistent_state.cu  REFUSED "mutable __device__ variable 'calls'"
expect hacks/skips_when_written.cu WRONG "last timed run"
expect hacks/depends_on_old_output.cu WRONG "race"
expect hacks/half_precision.cu    WRONG "differs"
expect hacks/host_code.cu         REFUSED "'cstdio'"
expect hacks/traps.cu             CRASH ""
expect hacks/illegal_address.cu   CRASH ""
expect hacks/hangs.cu             TIMEOUT "" --timeout 5
echo "hacks: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
