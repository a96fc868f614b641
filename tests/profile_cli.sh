#!/usr/bin/env bash
# profile end to end without a GPU: a shell script stands in for a CUDA
# application and writes the injection library's lines itself (to
# $KERNELSMITH_PROFILE_OUT), with the test apps' kernels under their real
# mangled names. Checked: the application's streams and exit status pass
# through untouched, the profile's shares and definitions, a crash (kill -9)
# still leaves a profile, usage errors, and `optimize --profile` searching
# only the hot kernels (with the stand-in judge).
# Without an NVIDIA driver the application still runs, after one line
# saying so, and an empty profile suggests nothing to optimize.
# usage: profile_cli.sh KERNELSMITH_CC TESTDATA FAKE_CUDA_DIR
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
data=$(cd "$2" && pwd)
fake_cuda=$(cd "${3:?usage: profile_cli.sh KERNELSMITH_CC TESTDATA FAKE_CUDA_DIR}" && pwd)
. "$(dirname "$0")/check.sh"

# profile ARGS...: kernelsmith-cc profile as on a machine with a driver,
# the CPU stand-in for libcuda.so.1 (tests/fake_cuda.c) answering its
# check; the shell applications below never load it. Without a driver is
# tested by itself (section 7).
profile() { LD_LIBRARY_PATH=$fake_cuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$bin" profile "$@"; }

# The application's own processes never load it; it only has to exist.
: >"$tmp/libfake_inject.so"
export KERNELSMITH_INJECT_LIB=$tmp/libfake_inject.so

# Writes one kernel line: NAME START_NS DURATION_NS [GRID_X]
cat >"$tmp/lines.sh" <<'EOF'
t0=1732000000000000000
kline() {
  printf '{"type":"kernel","name":"%s","grid":[%s,1,1],"block":[256,1,1],"smem_static":0,"smem_dynamic":0,"stream":7,"device":0,"context":1,"correlation":1,"start_ns":%s,"end_ns":%s,"api":"runtime"}\n' \
    "$1" "${4:-4096}" "$((t0 + $2))" "$((t0 + $2 + $3))" >>"$KERNELSMITH_PROFILE_OUT"
}
start() { echo '{"type":"start","version":1,"pid":1,"cupti_version":24,"time_ns":1}' >>"$KERNELSMITH_PROFILE_OUT"; }
SAXPY=_Z12saxpy_kernelifPfS_
GELU=_Z19gelu_forward_kernelPfPKfi
SOFTMAX=_Z19softmax_rows_kernelPfPKfii
LIBRARY=_ZN15cublas_internal5gemvxILi128ELi16EfEEvPKT1_PS1_i
EOF

# 1. An application that prints on both streams, reads stdin and exits 3:
#    saxpy 60% of the kernel time (3 launches, two grids), gelu 25%,
#    softmax 10%, a library's kernel 5%.
cat >"$tmp/app.sh" <<'EOF'
. "$(dirname "$0")/lines.sh"
start
kline $SAXPY 0 200000
kline $SAXPY 300000 200000
kline $SAXPY 600000 200000 8192
kline $GELU 900000 250000
kline $SOFTMAX 1200000 100000
kline $LIBRARY 1400000 50000
echo '{"type":"end","kernels":6,"time_ns":2}' >>"$KERNELSMITH_PROFILE_OUT"
read -r input
printf 'app stdout: %s\n' "$input"
printf 'args: %s\n' "$*"
echo "app stderr" >&2
echo "lines in: $KERNELSMITH_PROFILE_OUT" >&2
echo "injected: $CUDA_INJECTION64_PATH" >&2
exit 3
EOF
mkdir "$tmp/out"
echo "hello" | profile -o "$tmp/out/p.json" "$data/apps" -- sh "$tmp/app.sh" 'a b' c \
  >"$tmp/1.out" 2>"$tmp/1.err"
rc=$?
check "exit status is the application's" [ $rc -eq 3 ]
printf 'app stdout: hello\nargs: a b c\n' >"$tmp/1.want"
check "stdout is the application's, unchanged" cmp -s "$tmp/1.out" "$tmp/1.want"
check "the application's stderr comes first" [ "$(head -n 1 "$tmp/1.err")" = "app stderr" ]
check "the injection library is set" grep -qx "injected: $tmp/libfake_inject.so" "$tmp/1.err"
check "the lines go beside the profile" grep -q "^lines in: $tmp/out/.profile-lines-" "$tmp/1.err"
check "the lines file is removed" [ -z "$(ls -A "$tmp/out" | grep -v '^p.json$')" ]
check "table: saxpy first, 60%, its file" \
  grep -Eq '^ +1  saxpy_kernel\(int, float, float\*, float\*\) +3 +0\.600 +0\.2000 +60\.0%  .*saxpy/saxpy\.cu:17$' "$tmp/1.err"
check "table: the library's kernel" grep -Eq '^ +4  cublas_internal::gemvx<128, 16, float>.*5\.0%  \(not in the sources\)$' "$tmp/1.err"
check "profile JSON: shares, definitions, exit status" python3 - "$tmp/out/p.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "kernelsmith-cc.profile" and d["version"] == 1, d
assert d["command"][2:] == ["a b", "c"] and d["command"][0] == "sh", d["command"]
assert d["exit_status"] == 3 and d["signal"] is None and d["ended_normally"] is True, d
assert d["launches"] == 6 and abs(d["total_ms"] - 1.0) < 1e-9, d
ks = d["kernels"]
want = [("_Z12saxpy_kernelifPfS_", 0.6, "saxpy/saxpy.cu"), ("_Z19gelu_forward_kernelPfPKfi", 0.25, "gelu/gelu.cu"),
        ("_Z19softmax_rows_kernelPfPKfii", 0.1, "softmax/softmax.cu"),
        ("_ZN15cublas_internal5gemvxILi128ELi16EfEEvPKT1_PS1_i", 0.05, None)]
assert len(ks) == 4, ks
for k, (m, share, f) in zip(ks, want):
    assert k["mangled"] == m and abs(k["share"] - share) < 1e-12, k
    assert (k["source"] is None) if f is None else k["source"]["file"].endswith(f), k
s = ks[0]
assert s["launches"] == 3 and abs(s["mean_ms"] - 0.2) < 1e-12, s
assert [c["grid"][0] for c in s["configs"]] == [4096, 8192] and s["configs"][0]["launches"] == 2, s
assert s["demangled"] == "saxpy_kernel(int, float, float*, float*)", s
PY

# 2. A crash: one whole line, half a line, then kill -9.
cat >"$tmp/crash.sh" <<'EOF'
. "$(dirname "$0")/lines.sh"
start
kline $GELU 0 1000
printf '{"type":"kernel","name":"%s","grid":[1,' $SAXPY >>"$KERNELSMITH_PROFILE_OUT"
echo "about to crash"
kill -9 $$
EOF
profile -o "$tmp/crash.json" "$data/apps/gelu" -- sh "$tmp/crash.sh" >"$tmp/2.out" 2>"$tmp/2.err" </dev/null
rc=$?
check "crash: exit status 128+9" [ $rc -eq 137 ]
check "crash: stdout passes" [ "$(cat "$tmp/2.out")" = "about to crash" ]
check "crash: said" grep -q "the application did not exit normally (signal 9); the profile holds what ran before" "$tmp/2.err"
check "crash: the cut line is said" grep -q "the last line was cut off" "$tmp/2.err"
check "crash: the profile holds what ran" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["signal"] == 9 and d["exit_status"] is None and d["ended_normally"] is False, d
assert d["truncated_lines"] == 1 and d["launches"] == 1, d
assert d["kernels"][0]["source"]["qualified_name"] == "gelu_forward_kernel", d' "$tmp/crash.json"

# 3. The default output: .kernelsmith/profile.json in the project root.
mkdir -p "$tmp/proj/.git" "$tmp/proj/sub"
cp -r "$data/apps/saxpy" "$tmp/proj/sub/"
(cd "$tmp/proj/sub" && echo | profile -- sh "$tmp/app.sh" >/dev/null 2>"$tmp/3.err")
check "default output in the project root" [ -f "$tmp/proj/.kernelsmith/profile.json" ]
check "default output: mapped below the current directory" \
  grep -Eq '^ +1  saxpy_kernel.*  saxpy/saxpy\.cu:17$' "$tmp/3.err"
check "default output: gelu is not under the scanned paths" \
  grep -Eq '^ +2  gelu_forward_kernel.*\(not in the sources\)$' "$tmp/3.err"

# A relative -o, and an application that changes its directory first: the
# lines file it is told of is absolute.
cat >"$tmp/cd.sh" <<'EOF'
lines=$(cd "$(dirname "$0")" && pwd)/lines.sh
cd /
. "$lines"
start
kline $SAXPY 0 1000
EOF
(cd "$tmp" && profile -o rel.json "$data/apps/saxpy" -- sh cd.sh >/dev/null 2>&1)
check "relative output, the application changes directory" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["launches"] == 1 and d["kernels"][0]["source"]["line"] == 17, d' "$tmp/rel.json"

# 4. Errors.
profile -o "$tmp/x.json" >/dev/null 2>"$tmp/4a.err"
check "no command: exit 2" [ $? -eq 2 ]
check "no command: said" grep -q "no command to profile" "$tmp/4a.err"
profile -o "$tmp/x.json" -- "$tmp/no-such-app" >/dev/null 2>"$tmp/4b.err"
check "a command that does not exist: exit 127" [ $? -eq 127 ]
check "a command that does not exist: said" grep -q "cannot run '$tmp/no-such-app'" "$tmp/4b.err"
KERNELSMITH_INJECT_LIB=$tmp/missing.so profile -o "$tmp/x.json" -- true >/dev/null 2>"$tmp/4c.err"
check "no injection library: exit 1, one line" [ $? -eq 1 ] && [ "$(wc -l <"$tmp/4c.err")" -eq 1 ]
check "no injection library: named" grep -q "KERNELSMITH_INJECT_LIB=$tmp/missing.so: no such file" "$tmp/4c.err"
profile -o "$tmp/no-dir/x.json" -- true >/dev/null 2>"$tmp/4d.err"
check "no output directory: exit 1" [ $? -eq 1 ]
printf 'not json\n{"type":"end"}\n' >"$tmp/bad-lines"
cat >"$tmp/bad.sh" <<'EOF'
cat "$(dirname "$0")/bad-lines" >>"$KERNELSMITH_PROFILE_OUT"
EOF
profile -o "$tmp/bad.json" -- sh "$tmp/bad.sh" >/dev/null 2>"$tmp/4e.err"
check "malformed lines: exit 1, file:line" [ $? -eq 1 ] && grep -q "\.profile-lines-.*:1: not a JSON object" "$tmp/4e.err"
check "malformed lines: kept" [ -n "$(ls "$tmp"/.profile-lines-* 2>/dev/null)" ]

# 5. optimize --profile: only the hot kernels are searched. The sources:
#    the profile's three, and gemv, which has a spec too and is cold (each
#    optimize below scanning every app would cost seconds and test nothing
#    more).
hot_apps=("$data/apps/saxpy" "$data/apps/gelu" "$data/apps/softmax" "$data/apps/gemv")
"$bin" -q optimize --stand-in-judge --rounds 1 --profile "$tmp/out/p.json" --top 1 \
  --store "$tmp/s1" --json "${hot_apps[@]}" >"$tmp/5a.json" 2>"$tmp/5a.err"
check "--top 1: exit 0" [ $? -eq 0 ]
check "--top 1: only saxpy" python3 -c '
import json, sys
ks = [k["kernel"] for k in json.load(open(sys.argv[1]))["kernels"]]
assert ks == ["saxpy_kernel"], ks' "$tmp/5a.json"
"$bin" optimize --stand-in-judge --rounds 1 --profile "$tmp/out/p.json" --min-share 5 \
  --store "$tmp/s2" --json "${hot_apps[@]}" >"$tmp/5b.json" 2>"$tmp/5b.err"
check "--min-share 5: exit 0" [ $? -eq 0 ]
check "--min-share 5: saxpy, gelu, softmax" python3 -c '
import json, sys
ks = sorted(k["kernel"] for k in json.load(open(sys.argv[1]))["kernels"])
assert ks == ["gelu_forward_kernel", "saxpy_kernel", "softmax_rows_kernel"], ks' "$tmp/5b.json"
check "--min-share 5: the library kernel is said" \
  grep -q "hot kernel void cublas_internal::gemvx<128, 16, float>(float const\*, float\*, int) (5.0% of the GPU time) is not in the sources; not searched" "$tmp/5b.err"
"$bin" optimize --stand-in-judge --profile "$tmp/out/p.json" --min-share 70 "${hot_apps[@]}" \
  >/dev/null 2>"$tmp/5c.err"
check "--min-share 70: nothing, exit 1" [ $? -eq 1 ] && grep -q "no kernel has 70% of the GPU time" "$tmp/5c.err"
"$bin" optimize --profile "$tmp/out/p.json" -k saxpy_kernel "$data/apps" >/dev/null 2>&1
check "--profile with --kernel: exit 2" [ $? -eq 2 ]
"$bin" optimize --top 3 "$data/apps" >/dev/null 2>&1
check "--top without --profile: exit 2" [ $? -eq 2 ]
"$bin" optimize --profile "$tmp/1.out" "$data/apps" >/dev/null 2>"$tmp/5d.err"
check "--profile of something else: exit 1" [ $? -eq 1 ] && grep -q "not a profile" "$tmp/5d.err"

# A hot kernel without a spec: one line saying how to get one.
cat >"$tmp/nospec.sh" <<'EOF'
. "$(dirname "$0")/lines.sh"
start
kline _ZN3hot4axpyEPfPKffi 0 1000
EOF
profile -o "$tmp/nospec.json" "$data/profile" -- sh "$tmp/nospec.sh" >/dev/null 2>&1
"$bin" optimize --stand-in-judge --profile "$tmp/nospec.json" --store "$tmp/s3" "$data/profile" \
  >/dev/null 2>"$tmp/5e.err"
check "no spec: exit 1" [ $? -eq 1 ]
check "no spec: one line on how to get one" \
  grep -q "hot::axpy has neither a spec nor captured launches, so it is not searched: write a spec (docs/spec.md) or capture its inputs with kernelsmith-cc profile --capture axpy -- YOUR_APP" "$tmp/5e.err"

# Capture's options: --launches and --capture-limit only with --capture.
profile --launches 2 -- true >/dev/null 2>"$tmp/6.err"
check "--launches without --capture: usage error" [ $? -eq 2 ]
check "... saying what it goes with" grep -q "go with --capture" "$tmp/6.err"
profile --capture saxpy_kernel --launches 0 -- true >/dev/null 2>&1
check "--launches 0: usage error" [ $? -eq 2 ]

# Sampling, the default: the library is asked for 20% after 2 s; a sampled
# run's counts make the totals (the stand-in writes what the library would:
# 2 of 8 saxpy launches timed).
cat >"$tmp/sampled.sh" <<'EOF'
. "$(dirname "$0")/lines.sh"
start
echo "{\"type\":\"sample\",\"percent\":$KERNELSMITH_PROFILE_SAMPLE,\"period_ms\":500,\"after_ms\":$KERNELSMITH_PROFILE_SAMPLE_AFTER_MS}" >>"$KERNELSMITH_PROFILE_OUT"
kline $SAXPY 0 200000
kline $SAXPY 300000 200000
echo '{"type":"count","pid":1,"name":"_Z12saxpy_kernelifPfS_","launches":8}' >>"$KERNELSMITH_PROFILE_OUT"
echo '{"type":"end","kernels":2,"time_ns":2}' >>"$KERNELSMITH_PROFILE_OUT"
EOF
profile -o "$tmp/sampled.json" "$data/apps/saxpy" -- sh "$tmp/sampled.sh" \
  >/dev/null 2>"$tmp/sampled.err"
check "default sampling: exit 0" [ $? -eq 0 ]
check "... the profile says it, totals estimated" python3 -c "
import json,sys; p=json.load(open('$tmp/sampled.json'))
k=p['kernels'][0]
sys.exit(0 if p['sample_percent'] == 20 and p['sample_after_ms'] == 2000 and k['launches'] == 8
         and k['sampled_launches'] == 2 and abs(k['total_ms'] - 1.6) < 1e-9 else 1)"
check "... and the table's note" grep -q "note: sampled: every launch was counted, and kernels were timed 20% of the time after the first 2.0 s; for 1 kernel the total is" "$tmp/sampled.err"
profile --sample 25 --sample-after 0 -o "$tmp/sampled25.json" "$data/apps/saxpy" -- \
  sh "$tmp/sampled.sh" >/dev/null 2>&1
check "--sample 25 --sample-after 0: asked for" python3 -c "
import json,sys; p=json.load(open('$tmp/sampled25.json'))
sys.exit(0 if p['sample_percent'] == 25 and p['sample_after_ms'] == 0 else 1)"
# --sample 100 times every launch: the library is not asked to sample
cat >"$tmp/exact.sh" <<'EOF'
echo "sample=${KERNELSMITH_PROFILE_SAMPLE:-none}"
EOF
profile --sample 100 -o "$tmp/exact.json" -- sh "$tmp/exact.sh" >"$tmp/exact.out" 2>/dev/null
check "--sample 100: no sampling asked for" grep -qx "sample=none" "$tmp/exact.out"
profile --sample 101 -- true >/dev/null 2>&1
check "--sample 101: usage error" [ $? -eq 2 ]
profile --sample-after -5 -- true >/dev/null 2>&1
check "--sample-after -5: usage error" [ $? -eq 2 ]

# Byte counts take K, M and G.
cat >"$tmp/window.sh" <<'EOF'
echo "window=$KERNELSMITH_CAPTURE_WINDOW limit=$KERNELSMITH_CAPTURE_LIMIT"
EOF
profile --capture saxpy_kernel --capture-window 64M --capture-limit 2GiB \
  -o "$tmp/window.json" -- sh "$tmp/window.sh" >"$tmp/window.out" 2>/dev/null
check "--capture-window 64M --capture-limit 2GiB: in bytes" \
  grep -qx "window=67108864 limit=2147483648" "$tmp/window.out"
profile --capture saxpy_kernel --capture-window 64X -- true >/dev/null 2>&1
check "--capture-window 64X: usage error" [ $? -eq 2 ]

# 7. No NVIDIA driver (the loader's fault site stands for a missing one,
#    on any machine): one line first, the application runs as asked, and an
#    empty profile suggests nothing.
cat >"$tmp/nogpu.sh" <<'EOF'
echo "ran: $*"
echo "app stderr" >&2
exit 4
EOF
KERNELSMITH_FAULTS=cuda_load:1 profile -o "$tmp/nodrv.json" -- sh "$tmp/nogpu.sh" x \
  >"$tmp/7.out" 2>"$tmp/7.err"
check "no driver: the application's exit status" [ $? -eq 4 ]
check "no driver: the application ran" grep -qx "ran: x" "$tmp/7.out"
check "no driver: said first, in one line" [ "$(head -n 1 "$tmp/7.err")" = "kernelsmith-cc: warning: no NVIDIA driver found (libcuda.so.1 could not be loaded): GPU commands need one; sh runs all the same, but no kernel of it can be recorded" ]
check "no driver: then the application's stderr" [ "$(sed -n 2p "$tmp/7.err")" = "app stderr" ]
check "no driver: the profile is written, empty" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["kernels"] == [] and d["launches"] == 0 and d["exit_status"] == 4, d' "$tmp/nodrv.json"
check "no driver: no optimize suggested" bash -c "! grep -q 'optimize --profile' '$tmp/7.err'"
check "no driver: the last line says why it is empty" [ "$(tail -n 1 "$tmp/7.err")" = "profile written to $tmp/nodrv.json; it holds no kernel (no working NVIDIA driver: see above)" ]
# A machine really without one (skipped where a driver is installed).
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  "$bin" profile -o "$tmp/nodrv2.json" -- sh "$tmp/nogpu.sh" >/dev/null 2>"$tmp/7b.err"
  check "no driver installed: said first" grep -q "^kernelsmith-cc: warning: no NVIDIA driver found" <(head -n 1 "$tmp/7b.err")
fi
# With a driver, a run without kernels: no warning, and nothing suggested.
profile -o "$tmp/nokern.json" -- true >/dev/null 2>"$tmp/7c.err"
check "no kernel ran: no driver warning" bash -c "! grep -q 'warning' '$tmp/7c.err'"
check "no kernel ran: no optimize suggested" [ "$(tail -n 1 "$tmp/7c.err")" = "profile written to $tmp/nokern.json; it holds no kernel" ]

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
