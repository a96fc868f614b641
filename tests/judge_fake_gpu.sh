#!/usr/bin/env bash
# The judge end to end without a GPU: `check` on the fixtures of
# tests/fixtures/fp64 (a GELU whose spec asks for the fp64 reference and
# loosens the tolerance against the original), with the real worker running
# on the CPU stand-in for the driver (fake_cuda.c, which has a C twin of
# each kernel under its lowered name). A variant in half precision passes
# the loose tolerance and must be WRONG against the reference; an honest
# one must pass it; a half-precision kernel must have its `reference fp64`
# refused with the reason. The same fixtures run on a real GPU in hacks.sh.
# Then the compiler choice (--compiler) and warm timing (--warm, with
# tests/fixtures/warm's small GELU, whose data fit in the stand-in's L2).
set -u
bin=$(realpath "$1") worker=$(realpath "$2") fake=$(realpath "$3") fixtures=$(realpath "$4")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The stand-in goes to the worker only: NVRTC in kernelsmith-cc would trip
# over it. The worker inherits fds 3 and 4 through the exec.
printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$fake" "$worker" >"$tmp/worker"
chmod +x "$tmp/worker"
export KERNELSMITH_WORKER="$tmp/worker" XDG_CACHE_HOME="$tmp/cache"
pass=0 fail=0
ok() { pass=$((pass + 1)); printf '%-34s %s\n' "$1" "$2"; }
bad() { fail=$((fail + 1)); printf '%-34s FAIL: %s\n' "$1" "$2"; }
check() { # variant [args...]: check --json of gelu_ref.cu
  local variant=$1; shift
  "$bin" -q check gelu_forward_kernel --variant "$fixtures/fp64/$variant" --no-time --seeds 1 \
    --cache-dir "$tmp/cubins" "$@" "$fixtures/fp64/gelu_ref.cu" 2>&1
}
# "VERDICT<TAB>reason<TAB>has the fp64 errors" of a check --json output
summary() {
  python3 -c 'import json,sys
d = json.load(sys.stdin); r = d["fp64_reference"]
print(d["verdict"] + "\t" + (d["reason"] or "") + "\t" + str(r is not None and r["variant_max_abs_error"] >= 0))' 2>/dev/null
}
expect() { # variant verdict reason-substring
  local got
  got=$(check "$1" --json | summary)
  if [ "${got%%$'\t'*}" = "$2" ] && [[ "$got" == *"$3"* ]] && [ "${got##*$'\t'}" = True ]; then
    ok "fp64/$1" "$2"
  else
    bad "fp64/$1" "wanted $2 ($3) with the errors vs fp64, got: ${got:-no JSON}"
  fi
}

expect half_precision.cu WRONG "lowers precision: output 'out' is further from the fp64 reference"
expect exp_tanh.cu SAME "verified on every size set"
# The text report says both kernels' accuracy.
text=$(check exp_tanh.cu)
if [[ "$text" == *"accuracy  vs fp64: original max rel"*", variant max rel"* ]]; then
  ok "fp64/exp_tanh.cu (text)" "accuracy line"
else
  bad "fp64/exp_tanh.cu (text)" "no accuracy line in: $text"
fi
# No faithful twin: the spec's `reference fp64` is refused with the reason.
text=$("$bin" -q check scale_half --variant "$fixtures/fp64/exp_tanh.cu" --no-time \
       --cache-dir "$tmp/cubins" "$fixtures/fp64/half_kernel.cu" 2>&1)
rc=$?
if [ $rc -eq 1 ] && [[ "$text" == *"'reference fp64' cannot be honoured"*"'__half'"* ]]; then
  ok "fp64/half_kernel.cu" "refused"
else
  bad "fp64/half_kernel.cu" "exit $rc: $text"
fi
# apply --variant judges the variant first and applies only a FAST one: the
# half-precision variant is WRONG, so nothing is written.
mkdir -p "$tmp/proj" && cp "$fixtures/fp64/gelu_ref.cu" "$tmp/proj/"
text=$(cd "$tmp/proj" && "$bin" -q apply -k gelu_forward_kernel --variant "$fixtures/fp64/half_precision.cu"        --write . 2>&1)
rc=$?
if [ $rc -eq 1 ] && [[ "$text" == *"the judge calls"*"WRONG"*"not applied"* ]] &&
   cmp -s "$tmp/proj/gelu_ref.cu" "$fixtures/fp64/gelu_ref.cu"; then
  ok "apply --variant (WRONG)" "refused, file untouched"
else
  bad "apply --variant (WRONG)" "exit $rc: $text"
fi
# The compiler: --compiler nvcc judges both kernels with nvcc's cubins (the
# stand-in runs kernels by their lowered names, which must be nvcc's too),
# and the evaluation says which compiler made them.
field() { # python expression over the JSON document d
  python3 -c 'import json,sys
d = json.load(sys.stdin)
print('"$1"')' 2>/dev/null
}
if command -v nvcc >/dev/null 2>&1 || [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" ]; then
  got=$(check exp_tanh.cu --json --compiler nvcc | field 'd["verdict"], d["compile"]["compiler"]')
  if [ "$got" = "SAME nvcc" ]; then
    ok "check --compiler nvcc" "$got"
  else
    bad "check --compiler nvcc" "wanted SAME by nvcc, got: ${got:-no JSON}"
  fi
  # A variant only NVRTC compiles: both kernels judged as NVRTC compiles
  # them, and the evaluation says why.
  got=$("$bin" -q check gelu_forward_kernel --variant "$fixtures/warm/exp_tanh_nvrtc_only.cu" \
        --no-time --seeds 1 --compiler nvcc --cache-dir "$tmp/cubins" --json \
        "$fixtures/warm/gelu_small.cu" 2>&1 |
        field 'd["verdict"], d["compile"]["compiler"], "nvcc rejected it" in d["compile"]["compiler_note"]')
  if [ "$got" = "SAME nvrtc True" ]; then
    ok "check --compiler nvcc (fallback)" "$got"
  else
    bad "check --compiler nvcc (fallback)" "wanted SAME by NVRTC with a note, got: ${got:-no JSON}"
  fi
fi
got=$(check exp_tanh.cu --json --compiler nvrtc | field 'd["compile"]["compiler"]')
[ "$got" = nvrtc ] && ok "check --compiler nvrtc" "$got" || bad "check --compiler nvrtc" "got: ${got:-no JSON}"
text=$("$bin" -q check gelu_forward_kernel --variant x.cu --compiler gcc "$fixtures/fp64/gelu_ref.cu" 2>&1)
rc=$?
[ $rc -eq 2 ] && [[ "$text" == *"--compiler takes auto, nvrtc or nvcc"* ]] &&
  ok "check --compiler gcc" "usage error" || bad "check --compiler gcc" "exit $rc: $text"

# Warm timing: the small GELU's 512 KiB fit in the stand-in's 4 MiB L2, so
# --warm times both kernels again without flushing and reports it beside
# the (flushed) verdict; the large one's 32 MiB do not, and "warm" is null.
# How many samples fit in --max-seconds depends on the machine's load (the
# stand-in runs the kernels on the CPU), so only "timed at all" is asserted.
warm() { # fixture variant [args...]
  local fixture=$1 variant=$2; shift 2
  "$bin" -q check gelu_forward_kernel --variant "$fixtures/fp64/$variant" --warm --seeds 1 \
    --max-seconds 0.3 --cache-dir "$tmp/cubins" "$@" "$fixture" 2>&1
}
got=$(warm "$fixtures/warm/gelu_small.cu" exp_tanh.cu --json |
      field 'd["verdict"] in ("FAST", "SAME", "SLOW") and d["warm"]["bytes"] == 524288 and d["warm"]["speedup"] > 0 and d["warm"]["original_samples"] >= 1')
[ "$got" = True ] && ok "check --warm (fits in L2)" "timed warm" ||
  bad "check --warm (fits in L2)" "no warm timing in the JSON: ${got:-no JSON}"
text=$(warm "$fixtures/warm/gelu_small.cu" exp_tanh.cu)
[[ "$text" == *"warm      (data fit in L2: 0.5 of 4.2 MB, no flush between samples): "*"x, 95% interval"* ]] &&
  ok "check --warm (text)" "warm line" || bad "check --warm (text)" "no warm line in: $text"
got=$(warm "$fixtures/fp64/gelu_ref.cu" exp_tanh.cu --json | field 'd["warm"] is None and d["timing"]["speedup"] > 0')
[ "$got" = True ] && ok "check --warm (too large)" "not timed warm" ||
  bad "check --warm (too large)" "got: ${got:-no JSON}"
got=$("$bin" -q check gelu_forward_kernel --variant "$fixtures/fp64/exp_tanh.cu" --seeds 1 \
      --max-seconds 0.3 --cache-dir "$tmp/cubins" --json "$fixtures/warm/gelu_small.cu" 2>&1 |
      field 'd["warm"] is None')
[ "$got" = True ] && ok "check without --warm" "not timed warm" || bad "check without --warm" "got: ${got:-no JSON}"

# Screening: in a search, the 64 MiB size set of gelu_big.cu is verified
# after timing and only for a FAST variant (the others say 'screened' and
# carry no seeds there); `check`, unscreened, verifies it for every variant.
# The stand-in makes the original's block size (256) 5 ms slower, so that
# other block sizes (the tuning proposer's candidates) come out FAST, whatever
# the machine's load (set in the worker's wrapper: the worker
# gets only the environment it needs).
# slow_worker FILE SPEC: the worker on the stand-in, FAKE_CUDA_SLOW_BLOCK=SPEC.
slow_worker() {
  printf '#!/bin/sh\nFAKE_CUDA_SLOW_BLOCK=%s LD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$2" "$fake" "$worker" >"$1"
  chmod +x "$1"
}
slow_worker "$tmp/worker-slow" 256:5
KERNELSMITH_WORKER="$tmp/worker-slow" "$bin" -q optimize --proposer tuning --rounds 3 --max-evals 10 --sample-seconds 0.05 --no-confirm --compiler nvrtc \
  --store "$tmp/screen" --json "$fixtures/screen/gelu_big.cu" >"$tmp/screen.json" 2>"$tmp/screen.err"
rc=$?
got=$(python3 - "$tmp/screen/kernelsmith.db" <<'PY' 2>&1
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
seen = {"screened": 0, "verified": 0}
for verdict, doc in db.execute("SELECT verdict, json FROM evaluations WHERE variant IS NOT NULL"):
    big = [s for s in json.loads(doc).get("sizes", []) if s["name"] == "big"]
    if not big:
        continue
    big = big[0]
    small = [s for s in json.loads(doc)["sizes"] if s["name"] == "small"][0]
    if verdict == "FAST":
        assert not big.get("screened") and big["seeds"], ("FAST unverified", big)
        seen["verified"] += 1
    elif verdict in ("SAME", "SLOW"):
        assert big.get("screened") and not big["seeds"] and small["seeds"], (verdict, big)
        seen["screened"] += 1
assert seen["screened"] >= 1 and seen["verified"] >= 1, seen
print("ok", seen)
PY
)
if [ $rc -eq 0 ] && [[ "$got" == ok* ]]; then
  ok "optimize: large size screened" "${got#ok }"
else
  bad "optimize: large size screened" "exit $rc: $got $(tail -2 "$tmp/screen.err")"
fi
# A large timed size: timed without the recheck (downloading and comparing
# its outputs twice), and timed again with it only for a FAST variant. The
# stand-in makes the original's block (256) 30 ms slower and blocks of 64
# and 128 slower still: the search's first round (its seed is fixed) holds
# the original itself (SAME), SLOW blocks and FAST ones (512, 1024).
slow_worker "$tmp/worker-slow2" 256:30,128:60,64:60
KS_WORKER_PROFILE=1 KERNELSMITH_WORKER="$tmp/worker-slow2" "$bin" -q optimize --proposer tuning --rounds 2 --max-evals 10 --sample-seconds 0.05 --no-confirm --compiler nvrtc \
  --store "$tmp/screen2" --json "$fixtures/screen/gelu_big_timed.cu" >"$tmp/screen2.json" 2>"$tmp/screen2.err"
rc=$?
got=$(python3 - "$tmp/screen2/kernelsmith.db" "$tmp/screen2.err" <<'PY' 2>&1
import json, re, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
# The worker's own account (KS_WORKER_PROFILE): the timing requests whose
# recheck ran (a 64 MiB workload's recheck takes well over 0.0 ms) and
# those timed without it.
rechecks = [float(m.group(1)) for m in re.finditer(r"profile: +(?:verify )?time .*? recheck ([0-9.]+)",
                                                    open(sys.argv[2]).read())]
ran = sum(1 for t in rechecks if t > 0.0)
seen = {"FAST rechecked": 0, "recheck screened": 0}
for verdict, doc in db.execute("SELECT verdict, json FROM evaluations WHERE variant IS NOT NULL"):
    tm = json.loads(doc).get("timing", {})
    if verdict == "FAST":
        assert not tm.get("recheck_screened"), ("FAST without the recheck", tm)
        seen["FAST rechecked"] += 1
    elif verdict in ("SAME", "SLOW"):
        assert tm.get("recheck_screened"), (verdict, tm)
        seen["recheck screened"] += 1
assert seen["FAST rechecked"] >= 1 and seen["recheck screened"] >= 1, seen
# Every FAST variant was timed again with the recheck; no other was.
assert ran == seen["FAST rechecked"], (ran, seen, rechecks)
seen["rechecks run"] = ran
print("ok", seen)
PY
)
if [ $rc -eq 0 ] && [[ "$got" == ok* ]]; then
  ok "optimize: large timed size, recheck only when FAST" "${got#ok }"
else
  bad "optimize: large timed size, recheck only when FAST" "exit $rc: $got $(tail -2 "$tmp/screen2.err")"
fi
got=$("$bin" -q check gelu_forward_kernel --variant "$fixtures/fp64/exp_tanh.cu" --seeds 1 \
      --max-seconds 0.3 --cache-dir "$tmp/cubins" --json "$fixtures/screen/gelu_big.cu" 2>&1 |
      field '[len(s["seeds"]) > 0 and not s.get("screened") for s in d["sizes"] if s["name"] == "big"] == [True]')
[ "$got" = True ] && ok "check: large size verified" "unscreened" ||
  bad "check: large size verified" "got: ${got:-no JSON}"
echo "judge_fake_gpu: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
