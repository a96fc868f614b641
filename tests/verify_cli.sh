#!/usr/bin/env bash
# verify end to end without a GPU. The store: a stand-in search of three of
# the test apps' kernels, marked as judged on sm_90 (as apply_cli.sh does).
# The program: a shell script standing in for the patched application,
# writing the injection library's lines itself (as profile_cli.sh does) and
# the dispatch's statistics lines to $KERNELSMITH_STATS_FILE: without the
# variants (KERNELSMITH_DISABLE=1) every kernel is the original; with them
# saxpy runs saxpy_kernel_ks at twice the speed, gelu's guards fail (the
# original runs), softmax runs a variant slower than the original.
# Checked: the table's numbers and verdicts, the causes, the sites' paths,
# the JSON (always written), --json, --repeat, ks_verify_not_faster on the
# report, a program that fails with the variants (exit 1, said first), a
# program not rebuilt (no dispatch), usage errors. Where the injection
# library is built, it runs too, inside test_inject_app (its pretend CUPTI
# plays launches and records).
# usage: verify_cli.sh KERNELSMITH_CC TESTDATA TEST_VERIFY [INJECT_LIB TEST_INJECT_APP]
set -u
bin=$(realpath "$1")
data=$(realpath "$2")
test_verify=$(realpath "$3")
inject_lib=${4:-}
inject_app=${5:-}
. "$(dirname "$0")/check.sh"

repo=$tmp/repo
mkdir -p "$repo"
cp -r "$data/apps/." "$repo/"
rm -rf "$repo/expected"
(cd "$repo" && git init -q . && "$bin" -q optimize --stand-in-judge --rounds 2 \
   -k saxpy_kernel -k gelu_forward_kernel -k softmax_rows_kernel . >"$tmp/opt.out" 2>&1)
check "stand-in search: exit 0" [ $? -eq 0 ]
mark_sm90 "$repo/.kernelsmith"

: >"$tmp/libfake_inject.so"
export KERNELSMITH_INJECT_LIB=$tmp/libfake_inject.so

cat >"$tmp/lines.sh" <<'EOF'
t0=1732000000000000000
now=0
# kline NAME DURATION_NS [GRID_X]: one kernel record after the previous one
kline() {
  printf '{"type":"kernel","name":"%s","grid":[%s,1,1],"block":[256,1,1],"smem_static":0,"smem_dynamic":0,"stream":7,"device":0,"context":1,"correlation":1,"start_ns":%s,"end_ns":%s,"api":"runtime"}\n' \
    "$1" "${3:-4096}" "$((t0 + now))" "$((t0 + now + $2))" >>"$KERNELSMITH_PROFILE_OUT"
  now=$((now + $2 + 1000))
}
start() { echo '{"type":"start","version":1,"pid":1,"cupti_version":24,"time_ns":1}' >>"$KERNELSMITH_PROFILE_OUT"; }
end() { echo '{"type":"end","kernels":1,"time_ns":2}' >>"$KERNELSMITH_PROFILE_OUT"; }
# site KERNEL WHERE VARIANT OFF ARCH GUARDS NODEV: the dispatch's line at exit
site() {
  [ -n "${KERNELSMITH_STATS_FILE:-}" ] &&
    echo "kernelsmith: $1 at $2: variant $3, off $4, other architecture $5, guards failed $6, no device $7" >>"$KERNELSMITH_STATS_FILE"
}
SAXPY=_Z12saxpy_kernelifPfS_
SAXPY_KS=_Z15saxpy_kernel_ksifPfS_
GELU=_Z19gelu_forward_kernelPfPKfi
SOFTMAX=_Z19softmax_rows_kernelPfPKfii
SOFTMAX_KS=_Z22softmax_rows_kernel_ksPfPKfii
LIBRARY=_ZN15cublas_internal5gemvxILi128ELi16EfEEvPKT1_PS1_i
EOF

# Without the variants: saxpy 4 x 0.2 ms, gelu 2 x 0.25 ms, softmax 2 x
# 0.1 ms. With them: saxpy_ks 4 x 0.1 ms (2x), gelu's guards fail (the
# original, 2 x 0.25 ms), softmax_ks 2 x 0.125 ms (0.8x). A library kernel
# both times. FAIL_WITH=N: exit N with the variants.
cat >"$tmp/app.sh" <<'EOF'
. "$(dirname "$0")/lines.sh"
start
if [ "${KERNELSMITH_DISABLE:-}" = 1 ]; then
  for i in 1 2 3 4; do kline $SAXPY 200000; done
  kline $GELU 250000; kline $GELU 250000
  kline $SOFTMAX 100000; kline $SOFTMAX 100000
  site saxpy_kernel saxpy/saxpy.cu:41 0 4 0 0 0
  site gelu_forward_kernel gelu/gelu.cu:30 0 2 0 0 0
  site softmax_rows_kernel softmax/softmax.cu:50 0 2 0 0 0
else
  for i in 1 2 3 4; do kline $SAXPY_KS 100000; done
  kline $GELU 250000; kline $GELU 250000
  kline $SOFTMAX_KS 125000; kline $SOFTMAX_KS 125000
  site saxpy_kernel saxpy/saxpy.cu:41 4 0 0 0 0
  site gelu_forward_kernel gelu/gelu.cu:30 0 0 0 2 0
  site softmax_rows_kernel softmax/softmax.cu:50 2 0 0 0 0
fi
kline $LIBRARY 50000
end
echo "app stdout"
echo "stats file: ${KERNELSMITH_STATS_FILE:-none}" >&2
echo "disable: ${KERNELSMITH_DISABLE:-unset} sample: ${KERNELSMITH_PROFILE_SAMPLE:-unset}" >&2
[ -n "${KERNELSMITH_DISABLE:-}" ] || exit "${FAIL_WITH:-0}"
EOF

# 1. The report.
(cd "$repo" && KERNELSMITH_DISABLE=gelu_forward_kernel KERNELSMITH_PROFILE_SAMPLE=5 \
   "$bin" verify -- sh "$tmp/app.sh" >"$tmp/1.out" 2>"$tmp/1.err")
rc=$?
check "exit 0 (a winner not faster is reported, not an error)" [ $rc -eq 0 ]
check "first line: every run exited 0" \
  grep -qx "the program exited 0 in every run: 1 without the variants, 1 with them" <(head -n 1 "$tmp/1.out")
check "the program's stdout goes to stderr" grep -qx "app stdout" "$tmp/1.err"
check "... and not to stdout" bash -c "! grep -q 'app stdout' '$tmp/1.out'"
check "one run without, one with (the user's KERNELSMITH_DISABLE replaced)" \
  [ "$(grep -c '^disable: 1 ' "$tmp/1.err")" -eq 1 ] && [ "$(grep -c '^disable: unset ' "$tmp/1.err")" -eq 1 ]
check "every launch timed (no sampling)" [ "$(grep -c 'sample: unset$' "$tmp/1.err")" -eq 2 ]
check "a private statistics file" grep -q "^stats file: $repo/.kernelsmith/.verify-.*/stats-1$" "$tmp/1.err"
check "the private files are removed" [ -z "$(ls -A "$repo/.kernelsmith" | grep '^\.verify-')" ]
check "table: saxpy 0.8 ms -> 0.4 ms, 4/4 launches, 2.00x, faster" \
  grep -Eq '^saxpy_kernel +0\.800 +0\.400 +4/4 +2\.00x +[0-9.]+x  faster$' "$tmp/1.out"
check "table: saxpy's site took the variant" grep -qx "    saxpy/saxpy.cu:41: variant 4/4" "$tmp/1.out"
check "table: saxpy faster than the search said, and why" \
  grep -Eq "^    faster in the program \(2\.00x\) than in the search \([0-9.]+x\): warm cache: " "$tmp/1.out"
check "table: gelu 0.5 ms both times, 1.00x, not faster" \
  grep -Eq '^gelu_forward_kernel +0\.500 +0\.500 +2/2 +1\.00x +[0-9.]+x  not faster$' "$tmp/1.out"
check "table: gelu's guards failed" grep -qx "    gelu/gelu.cu:30: guards failed 2" "$tmp/1.out"
check "table: gelu's cause" \
  grep -qx "    not faster: the variant did not run (guards failed at gelu/gelu.cu:30)" "$tmp/1.out"
check "table: softmax 0.80x, not faster" \
  grep -Eq '^softmax_rows_kernel +0\.200 +0\.250 +2/2 +0\.80x +[0-9.]+x  not faster$' "$tmp/1.out"
check "table: the kernel without a winner is not listed" \
  grep -qx "1 kernel the profile saw has no winner and is not listed" "$tmp/1.out"
check "the report's file is named, with apply --from-verify" \
  grep -q "apply --from-verify $repo/.kernelsmith/verify.json leaves out the 2 winners not faster" "$tmp/1.out"
check "JSON: written, every number" python3 - "$repo/.kernelsmith/verify.json" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "kernelsmith-cc.verify" and d["version"] == 1, d
assert d["command"][0] == "sh" and d["repeat"] == 1 and d["failed"] is False and d["failure"] is None, d
assert [(r["variants"], r["exit_status"]) for r in d["runs"]] == [(False, 0), (True, 0)], d["runs"]
assert d["unlisted_kernels"] == 1, d
k = {x["kernel"]: x for x in d["kernels"]}
assert sorted(k) == ["gelu_forward_kernel", "saxpy_kernel", "softmax_rows_kernel"], list(k)
s = k["saxpy_kernel"]
assert s["verdict"] == "faster" and s["variant"] == "saxpy_kernel_ks", s
# 2.00x in the program against the search's 1.25x: faster, and why is said.
assert s["cause"] == "warm cache", s
assert re.match(r"faster in the program \(2\.00x\) than in the search \([0-9.]+x\): warm cache: ", s["cause_detail"]), s
assert abs(s["before"]["ms"] - 0.8) < 1e-9 and abs(s["after"]["ms"] - 0.4) < 1e-9, s
assert s["before"]["launches"] == 4 and s["after"]["variant_launches"] == 4, s
assert s["after"]["original_launches"] == 0 and abs(s["speedup"] - 2.0) < 1e-9, s
assert s["search_speedup"] > 1 and abs(s["search_baseline_ms"] - 1.0) < 1e-9, s
assert s["after"]["config"]["grid"] == [4096, 1, 1] and s["after"]["config"]["launches"] == 4, s
assert s["before"]["back_to_back"] == 3, s
assert s["sites"] == [{"where": "saxpy/saxpy.cu:41", "variant": 4, "off": 0, "other_architecture": 0,
                       "guards_failed": 0, "no_device": 0, "paths": "variant 4/4"}], s["sites"]
g = k["gelu_forward_kernel"]
assert g["verdict"] == "not faster" and g["cause"] == "guards failed", g
assert g["cause_detail"] == "the variant did not run (guards failed at gelu/gelu.cu:30)", g
assert g["after"]["variant_launches"] == 0 and g["after"]["original_launches"] == 2, g
assert abs(g["speedup"] - 1.0) < 1e-9 and g["sites"][0]["guards_failed"] == 2, g
m = k["softmax_rows_kernel"]
assert m["verdict"] == "not faster" and abs(m["speedup"] - 0.8) < 1e-9, m
assert m["cause"] in ("a different launch", "warm cache", "a different size", "unknown"), m
PY
check "ks_verify_not_faster: gelu and softmax" \
  [ "$("$test_verify" --not-faster "$repo/.kernelsmith/verify.json")" = "$(printf 'gelu_forward_kernel\nsoftmax_rows_kernel')" ]
(cd "$repo" && "$bin" apply --from-verify "$repo/.kernelsmith/verify.json" >"$tmp/fv.patch" 2>"$tmp/fv.err")
check "apply --from-verify: exit 0" [ $? -eq 0 ]
check "... saxpy applied" grep -q "saxpy_kernel_ks" "$tmp/fv.patch"
check "... gelu and softmax left out, said" sh -c "grep -q 'gelu_forward_kernel: not applied: verify found it not faster' '$tmp/fv.err' && grep -q 'softmax_rows_kernel: not applied: verify found it not faster' '$tmp/fv.err' && ! grep -q 'gelu_forward_kernel_ks\|softmax_rows_kernel_ks' '$tmp/fv.patch'"
echo '{"schema": "kernelsmith-cc.verify", "kernels": [{"kernel": 3}]}' >"$tmp/bad.json"
(cd "$repo" && "$bin" apply --from-verify "$tmp/bad.json" >/dev/null 2>"$tmp/fvbad.err")
check "apply --from-verify a bad report: exit 1" [ $? -eq 1 ]
check "... one line naming the file" sh -c "grep -q 'bad.json' '$tmp/fvbad.err' && [ \$(wc -l <'$tmp/fvbad.err') -eq 1 ]"

# 2. --json: the report alone on stdout; -o elsewhere; --repeat 2 doubles
#    the totals and alternates the runs.
(cd "$repo" && "$bin" verify --json --repeat 2 -o "$tmp/v2.json" -- sh "$tmp/app.sh" \
   >"$tmp/2.out" 2>"$tmp/2.err")
check "--json --repeat 2: exit 0" [ $? -eq 0 ]
check "--json: stdout is the report, and -o has it too" python3 - "$tmp/2.out" "$tmp/v2.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d == json.load(open(sys.argv[2]))
assert d["repeat"] == 2 and [r["variants"] for r in d["runs"]] == [False, True, False, True], d["runs"]
s = {x["kernel"]: x for x in d["kernels"]}["saxpy_kernel"]
assert abs(s["before"]["ms"] - 1.6) < 1e-9 and s["after"]["variant_launches"] == 8, s
assert abs(s["speedup"] - 2.0) < 1e-9 and s["sites"][0]["variant"] == 8, s
PY
check "--repeat 2: four runs" [ "$(grep -c '^disable: ' "$tmp/2.err")" -eq 4 ]

# 3. A program that fails with the variants and not without: exit 1, said
#    first; the JSON is still written.
(cd "$repo" && FAIL_WITH=3 "$bin" verify --repeat 3 -o "$tmp/v3.json" -- sh "$tmp/app.sh" \
   >"$tmp/3.out" 2>"$tmp/3.err")
check "fails with the variants: exit 1" [ $? -eq 1 ]
check "... said first" grep -q "^FAILED: the program failed with the variants (exit status 3) and not without them" \
  <(head -n 1 "$tmp/3.out")
check "... and on stderr" grep -q "error: the program failed with the variants (exit status 3)" "$tmp/3.err"
check "... the runs stop after the failed pair" [ "$(grep -c '^disable: ' "$tmp/3.err")" -eq 2 ]
check "... the JSON says failed" python3 - "$tmp/v3.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["failed"] is True and "failed with the variants" in d["failure"], d
assert [(r["variants"], r["exit_status"]) for r in d["runs"]] == [(False, 0), (True, 3)], d["runs"]
assert {k["verdict"] for k in d["kernels"]} == {"failed"}, d["kernels"]
PY
check "ks_verify_not_faster: none of failed ones" \
  [ -z "$("$test_verify" --not-faster "$tmp/v3.json")" ]

# 4. A program not rebuilt from the patched sources: the originals only, no
#    statistics lines.
cat >"$tmp/old.sh" <<'EOF'
. "$(dirname "$0")/lines.sh"
start
kline $SAXPY 200000
end
EOF
(cd "$repo" && "$bin" verify -o "$tmp/v4.json" -- sh "$tmp/old.sh" >"$tmp/4.out" 2>"$tmp/4.err")
check "not rebuilt: exit 0" [ $? -eq 0 ]
check "... saxpy not faster, no dispatch" \
  grep -q "not faster: the variant did not run (no patched launch site of it reported" "$tmp/4.out"
check "... the kernels never launched: not run" python3 - "$tmp/v4.json" <<'PY'
import json, sys
k = {x["kernel"]: x for x in json.load(open(sys.argv[1]))["kernels"]}
assert k["saxpy_kernel"]["cause"] == "no dispatch", k["saxpy_kernel"]
assert k["gelu_forward_kernel"]["verdict"] == "not run", k["gelu_forward_kernel"]
PY

# 5. Errors.
(cd "$repo" && "$bin" verify >/dev/null 2>"$tmp/5a.err")
check "no command: exit 2" [ $? -eq 2 ] && grep -q "no command to run" "$tmp/5a.err"
(cd "$repo" && "$bin" verify --repeat 0 -- true >/dev/null 2>&1)
check "--repeat 0: exit 2" [ $? -eq 2 ]
(cd "$repo" && "$bin" verify -- "$tmp/no-such-app" >/dev/null 2>"$tmp/5b.err")
check "a command that does not exist: exit 1" [ $? -eq 1 ] && grep -q "cannot run '$tmp/no-such-app'" "$tmp/5b.err"
(cd "$repo" && "$bin" verify -- true >/dev/null 2>"$tmp/5c.err")
check "no CUDA in the program: exit 1" [ $? -eq 1 ] && grep -q "loaded the injection library" "$tmp/5c.err"
(cd "$tmp" && "$bin" verify --store "$tmp/none" -- true >/dev/null 2>"$tmp/5d.err")
check "no store: exit 1" [ $? -eq 1 ] && grep -q "no results store" "$tmp/5d.err"
KERNELSMITH_INJECT_LIB=$tmp/missing.so "$bin" verify --store "$repo/.kernelsmith" -- true >/dev/null 2>"$tmp/5e.err"
check "no injection library: exit 1" [ $? -eq 1 ] && grep -q "KERNELSMITH_INJECT_LIB=$tmp/missing.so: no such file" "$tmp/5e.err"
printf 'not json\n' >"$tmp/bad-lines"
echo 'cat "$(dirname "$0")/bad-lines" >>"$KERNELSMITH_PROFILE_OUT"' >"$tmp/bad.sh"
(cd "$repo" && "$bin" verify -- sh "$tmp/bad.sh" >/dev/null 2>"$tmp/5f.err")
check "unreadable lines: exit 1, named" [ $? -eq 1 ] && grep -q "the profile could not be made: .*\.profile-lines-.*:1: not a JSON object" "$tmp/5f.err"
echo '{"schema": "kernelsmith-cc.verify", "version": 1, "kernels": [{"kernel": "k", "verdict": 3}]}' >"$tmp/bad.json"
"$test_verify" --not-faster "$tmp/bad.json" >/dev/null 2>"$tmp/5g.err"
check "a bad report: one line naming the file and field" \
  [ "$(cat "$tmp/5g.err")" = "$tmp/bad.json: kernels[0].verdict: not a string" ]

# 6. The real injection library, in a pretend application: its lines read,
#    its process counted both times, CUPTI's dropped records said.
if [ -n "$inject_lib" ] && [ -n "$inject_app" ]; then
  (cd "$repo" && KERNELSMITH_INJECT_LIB=$inject_lib "$bin" verify -o "$tmp/v6.json" -- \
     sh -c 'exec "$0" "$CUDA_INJECTION64_PATH" records' "$inject_app" >"$tmp/6.out" 2>"$tmp/6.err")
  check "the injection library: exit 0" [ $? -eq 0 ]
  check "... the pretend application's stdout on stderr" grep -qx "app: done" "$tmp/6.err"
  check "... dropped records said" grep -qx "note: CUPTI dropped 10 records: the totals are short" "$tmp/6.out"
  check "... its lines read" python3 - "$tmp/v6.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert [r["processes"] for r in d["runs"]] == [1, 1], d["runs"]
assert d["unlisted_kernels"] == 5 and d["dropped_records"] == 10, d
assert {k["verdict"] for k in d["kernels"]} == {"not run"}, d["kernels"]
PY
fi

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
