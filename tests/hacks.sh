#!/usr/bin/env bash
# The judge against reward hacks: every fixture in tests/fixtures/hacks is a
# variant of gelu_forward_kernel (testdata/apps/gelu) that cheats in one way;
# each must get the expected verdict, for the expected reason. Two honest
# variants must be FAST and SAME. Then the floor fixture, and the fp64
# reference's (tests/fixtures/fp64). Needs a GPU: exit 77 (skipped) without
# one.
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
# Below the physical floor: a kernel of its own, with a degenerate spec.
got=$("$bin" -q check row_sum --variant "$fixtures/floor/shortcut.cu" --json --cache-dir "$cache" \
      "$fixtures/floor/row_sum.cu" 2>/dev/null | summary)
if [ "${got%%$'\t'*}" = SUSPICIOUS ] && [[ "${got#*$'\t'}" == *"below the physical floor"* ]]; then
  pass=$((pass + 1)); printf '%-34s %s\n' floor/shortcut.cu SUSPICIOUS
else
  fail=$((fail + 1)); printf '%-34s FAIL: wanted SUSPICIOUS, got: %s\n' floor/shortcut.cu "${got:-no JSON}"
fi
# The fp64 reference: a GELU whose spec asks for it and loosens the tolerance
# against the original. Half precision stays within that tolerance and is
# caught against the reference; tanh through expf is as accurate as the
# original (verified only: its timing verdict is not the point here).
fp64() { # fixture verdict reason-substring [extra args...]
  local file=$1 verdict=$2 needle=$3; shift 3
  local got
  got=$("$bin" -q check gelu_forward_kernel --variant "$fixtures/fp64/$file" --json \
        --cache-dir "$cache" "$@" "$fixtures/fp64/gelu_ref.cu" 2>/dev/null | summary)
  if [ "${got%%$'\t'*}" = "$verdict" ] && [[ "${got#*$'\t'}" == *"$needle"* ]]; then
    pass=$((pass + 1)); printf '%-34s %s\n' "fp64/$file" "$verdict"
  else
    fail=$((fail + 1)); printf '%-34s FAIL: wanted %s (%s), got: %s\n' "fp64/$file" "$verdict" "$needle" "${got:-no JSON}"
  fi
}
fp64 half_precision.cu WRONG "fp64"
fp64 exp_tanh.cu SAME "verified on every size set" --no-time
echo "hacks: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
