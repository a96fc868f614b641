#!/usr/bin/env bash
# tune end to end without a GPU: the stand-in judge, and a shell script
# standing in for the CUDA program on a copy of two test apps (saxpy,
# gelu). As profile_cli.sh and verify_cli.sh do, the script writes the
# injection library's lines itself: saxpy 60% of the GPU time, gelu 30%,
# a library's kernel 10%; in the capture run (KERNELSMITH_CAPTURE set) it
# writes a capture of one saxpy launch in the format of
# docs/capture-format.md; in verify's runs, without the variants
# (KERNELSMITH_DISABLE=1) the originals, with them saxpy_kernel_ks at twice
# saxpy's speed and gelu's guards failing. Every run appends its kind to
# runs.log, so that the checks see which phases ran the program.
# Checked: every phase runs, the table and the JSON, the patch applies
# (git apply --check) and nothing but .kernelsmith/ is left in the tree; a
# tune killed (kill -9) in each phase resumes without repeating finished
# phases or kernels; a failing program; no GPU; usage errors.
# usage: tune_cli.sh KERNELSMITH_CC TESTDATA FAKE_CUDA_DIR
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
data=$(cd "$2" && pwd)
fake_cuda=$(cd "${3:?usage: tune_cli.sh KERNELSMITH_CC TESTDATA FAKE_CUDA_DIR}" && pwd)
. "$(dirname "$0")/check.sh"

# With the stand-in judge tune asks for no driver: the program (which
# never loads one) runs on any machine. The CPU stand-in for libcuda.so.1
# is not put on the library path: NVRTC, in the same process, must not
# meet it.
tune() { "$bin" tune "$@"; }
: "$fake_cuda"
: >"$tmp/libfake_inject.so"
export KERNELSMITH_INJECT_LIB=$tmp/libfake_inject.so

python3 - "$tmp/saxpy.kscap" <<'PY'
import json, struct, sys, zlib
def rec(t, payload):
    return struct.pack("<IIQ", t, 0, len(payload)) + payload + struct.pack("<I", zlib.crc32(payload))
n, a = 1000, 2.5
x = struct.pack("<%df" % n, *[float(i % 5) for i in range(n)])
y = struct.pack("<%df" % n, *[float(i % 3) for i in range(n)])
y2 = struct.pack("<%df" % n, *[a * (i % 5) + (i % 3) for i in range(n)])
blobs = rec(2, struct.pack("<Q", 1) + x) + rec(2, struct.pack("<Q", 2) + y) + \
        rec(2, struct.pack("<Q", 3) + x) + rec(2, struct.pack("<Q", 4) + y2)
bx, by = 0x7F0000000000, 0x7F0000100000
def ptr(i, off, base, before, after):
    return {"index": i, "offset": off, "size": 8, "kind": "pointer",
            "value": struct.pack("<Q", base).hex(), "memory": "device", "base": hex(base),
            "alloc_size": 4 * n, "ptr_offset": 0, "before": before, "after": after}
launch = {"kernel": "_Z12saxpy_kernelifPfS_", "launch": 0, "grid": [4, 1, 1], "block": [256, 1, 1],
          "smem": 0, "stream": "0x0", "device": 0, "api": "cuLaunchKernel", "over_limit": False,
          "bytes_needed": 8 * n, "bytes": 16 * n,
          "params": [{"index": 0, "offset": 0, "size": 4, "kind": "scalar", "value": struct.pack("<i", n).hex()},
                     {"index": 1, "offset": 4, "size": 4, "kind": "scalar", "value": struct.pack("<f", a).hex()},
                     ptr(2, 8, bx, 1, 3), ptr(3, 16, by, 2, 4)],
          "blobs": [{"id": i + 1, "size": len(b), "crc32": zlib.crc32(b)} for i, b in enumerate([x, y, x, y2])]}
data = b"KSCAP\0\1\0" + blobs + rec(1, json.dumps(launch).encode()) + rec(3, struct.pack("<Q", 1))
open(sys.argv[1], "wb").write(data)
PY

cat >"$tmp/app.sh" <<'EOF'
t0=1732000000000000000
now=0
kline() {
  printf '{"type":"kernel","name":"%s","grid":[%s,1,1],"block":[256,1,1],"smem_static":0,"smem_dynamic":0,"stream":7,"device":0,"context":1,"correlation":1,"start_ns":%s,"end_ns":%s,"api":"runtime"}\n' \
    "$1" "${3:-4096}" "$((t0 + now))" "$((t0 + now + $2))" >>"$KERNELSMITH_PROFILE_OUT"
  now=$((now + $2 + 1000))
}
site() {
  [ -n "${KERNELSMITH_STATS_FILE:-}" ] &&
    echo "kernelsmith: $1 at $2: variant $3, off $4, other architecture $5, guards failed $6, no device $7" >>"$KERNELSMITH_STATS_FILE"
}
SAXPY=_Z12saxpy_kernelifPfS_
SAXPY_KS=_Z15saxpy_kernel_ksifPfS_
GELU=_Z19gelu_forward_kernelPfPKfi
LIBRARY=_ZN15cublas_internal5gemvxILi128ELi16EfEEvPKT1_PS1_i
if [ -n "${KERNELSMITH_CAPTURE:-}" ]; then kind=capture
elif [ "${KERNELSMITH_DISABLE:-}" = 1 ]; then kind=verify-off
elif [ -n "${KERNELSMITH_STATS_FILE:-}" ]; then kind=verify-on
else kind=profile; fi
echo "$kind" >>"$TUNE_LOG"
echo "app stdout ($kind)"
[ "${FAIL_IN:-}" = "$kind" ] && exit 3
if [ "${KILL_IN:-}" = "$kind" ]; then kill -9 "$PPID"; exit 0; fi
echo '{"type":"start","version":1,"pid":1,"cupti_version":24,"time_ns":1}' >>"$KERNELSMITH_PROFILE_OUT"
if [ "$kind" = verify-on ]; then
  for i in 1 2 3 4; do kline $SAXPY_KS 100000; done
  site saxpy_kernel saxpy/saxpy.cu:23 4 0 0 0 0
  site gelu_forward_kernel gelu/gelu.cu:28 0 0 0 2 0
else
  for i in 1 2 3 4; do kline $SAXPY 200000; done
  [ "$kind" = verify-off ] && site saxpy_kernel saxpy/saxpy.cu:23 0 4 0 0 0
  [ "$kind" = verify-off ] && site gelu_forward_kernel gelu/gelu.cu:28 0 2 0 0 0
fi
kline $GELU 200000; kline $GELU 200000 8192
kline $LIBRARY 133333
echo '{"type":"end","kernels":1,"time_ns":2}' >>"$KERNELSMITH_PROFILE_OUT"
if [ "$kind" = capture ]; then
  case ",$KERNELSMITH_CAPTURE," in *,$SAXPY,*) cp "$(dirname "$0")/saxpy.kscap" "$KERNELSMITH_CAPTURE_OUT" ;; esac
  echo "capture asked: $KERNELSMITH_CAPTURE launches=$KERNELSMITH_CAPTURE_LAUNCHES limit=$KERNELSMITH_CAPTURE_LIMIT" >>"$TUNE_LOG"
fi
exit 0
EOF

# A project: the two apps and their shared header, committed.
newrepo() {
  rm -rf "$1"
  mkdir -p "$1"
  cp -r "$data/apps/saxpy" "$data/apps/gelu" "$data/apps/common" "$1/"
  (cd "$1" && git init -q . && git add -A && git -c user.email=t@t -c user.name=t commit -qm init)
}
count() { grep -cx "$1" "$2" 2>/dev/null || true; }
opts=(--stand-in-judge --rounds 2 --max-seconds 60)

# 1. Every phase.
repo=$tmp/repo
newrepo "$repo"
export TUNE_LOG=$tmp/runs1.log
(cd "$repo" && tune "${opts[@]}" --json "$tmp/t1.json" -- sh "$tmp/app.sh" >"$tmp/1.out" 2>"$tmp/1.err")
rc=$?
check "tune: exit 0" [ $rc -eq 0 ]
check "the program ran four times: profile, capture, verify without and with" \
  [ "$(grep -v '^capture asked' "$TUNE_LOG" | tr '\n' ' ')" = "profile capture verify-off verify-on " ]
check "capture asked for the two hot kernels, 2 launches (gelu ran two configurations)" \
  grep -qx "capture asked: _Z12saxpy_kernelifPfS_,_Z19gelu_forward_kernelPfPKfi launches=2 limit=1073741824" "$TUNE_LOG"
check "the capture's choice said in one line" \
  grep -q "capturing the first 2 launches of 2 kernels (to cover their sizes: the most launch configurations one of them ran with, at most 3), up to 1 GiB per launch, whole allocations" "$tmp/1.err"
check "gelu's launches not captured: said" grep -q "gelu_forward_kernel: no launch of it was captured" "$tmp/1.err"
check "the program's stdout goes to stderr" grep -q "^app stdout (profile)$" "$tmp/1.err"
check "... not to stdout" bash -c "! grep -q 'app stdout' '$tmp/1.out'"
check "a line per phase" [ "$(grep -c '^kernelsmith-cc: \[[1-6]/6\] ' "$tmp/1.err")" -eq 6 ]
check "table: saxpy, 60%, 2.00x in the program, faster" \
  grep -Eq '^saxpy_kernel +60\.0% +[0-9.]+x +2\.00x  .*  faster$' "$tmp/1.out"
check "table: gelu, 30%, its verdict and reason" \
  grep -Eq '^gelu_forward_kernel +30\.0% .*(not faster: the variant did not run \(guards failed at gelu/gelu.cu:28\)|no faster variant)$' "$tmp/1.out"
check "table: the library kernel not tuned" grep -qx "1 other kernel of the program not tuned (less GPU time)" "$tmp/1.out"
check "table: the patch's path, for git apply" \
  grep -qx "patch: $repo/.kernelsmith/tune.patch ([0-9]* files); apply it with: git apply .kernelsmith/tune.patch" "$tmp/1.out"
check "the patch applies" bash -c "cd '$repo' && git apply --check .kernelsmith/tune.patch"
check "the patch dispatches saxpy" grep -q "saxpy_kernel_ks" "$repo/.kernelsmith/tune.patch"
check "nothing left in the tree but .kernelsmith/ (which ignores itself)" \
  [ "$(cd "$repo" && git status --porcelain --ignored)" = "!! .kernelsmith/" ]
check "JSON: the whole result" python3 - "$tmp/t1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "kernelsmith-cc.tune" and d["version"] == 1, d
assert d["measured"] is False and d["failure"] is None and d["no_gpu"] is None, d
assert d["program_runs"] == 4 and d["command"][0] == "sh", d
assert all(p["done"] and not p["resumed"] for p in d["phases"].values()), d["phases"]
assert list(d["phases"]) == ["profile", "pick", "capture", "optimize", "patch", "verify"], d["phases"]
k = {x["kernel"]: x for x in d["kernels"]}
assert list(k) == ["saxpy_kernel", "gelu_forward_kernel"], list(k)
s = k["saxpy_kernel"]
assert abs(s["share"] - 0.6) < 1e-6 and s["captured_launches"] == 1, s
assert s["verdict"] == "faster" and abs(s["program_speedup"] - 2.0) < 1e-9, s
assert s["search_speedup"] > 1 and s["techniques"] and s["evaluated"] > 0 and not s["resumed"], s
g = k["gelu_forward_kernel"]
assert abs(g["share"] - 0.3) < 1e-6 and g["captured_launches"] == 0, g
assert g["verdict"] in ("not faster", "no faster variant") and g["reason"], g
assert d["other_kernels"] == 1 and d["patch"]["path"].endswith("/.kernelsmith/tune.patch"), d
assert d["capture"].startswith("capturing the first 2 launches"), d
PY
check "the store: the run is a tune, done, its phases recorded" python3 - "$repo/.kernelsmith/kernelsmith.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("SELECT command, status FROM runs").fetchall() == [("tune", "done")]
ph = dict(db.execute("SELECT name, status FROM phases").fetchall())
assert ph == {p: "done" for p in ("profile", "pick", "capture", "optimize", "patch", "verify")}, ph
spec = dict(db.execute("SELECT name, spec FROM kernels").fetchall())
assert spec["saxpy_kernel"].startswith("capture:") or "saxpy" in spec["saxpy_kernel"], spec
PY
(cd "$repo" && tune --resume >/dev/null 2>"$tmp/1r.err")
check "resume of a finished tune: refused, exit 1" [ $? -eq 1 ] && grep -q "nothing to resume: tune run 1 finished" "$tmp/1r.err"
(cd "$repo" && tune "${opts[@]}" --json - -- sh "$tmp/app.sh" >"$tmp/1b.json" 2>/dev/null)
check "--json -: the JSON alone on stdout" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d['run'] == 2 else 1)" "$tmp/1b.json"

(cd "$repo" && "$bin" optimize --resume >/dev/null 2>"$tmp/1c.err")
check "optimize --resume does not take a tune's run" \
  grep -q "nothing to resume: run 2 is a tune; continue it with kernelsmith-cc tune --resume" "$tmp/1c.err"
# --top 3: the library's kernel is a line of its own, saying why.
(cd "$repo" && tune --stand-in-judge --rounds 1 --top 3 -- sh "$tmp/app.sh" >"$tmp/1d.out" 2>/dev/null)
check "--top 3: exit 0" [ $? -eq 0 ]
check "--top 3: the library's kernel, not in the sources" \
  grep -Eq '^cublas_internal::gemvx +10\.0% +- +- +- +skipped: not in the sources' "$tmp/1d.out"

# 2. Killed (kill -9) in each phase, then resumed: what finished is not
#    done again. The program kills tune in the phases that run it; the
#    fault site tune_kill in the others (at the Nth phase start or
#    finished kernel: profile 1, pick 2, capture 3, optimize 4, the
#    kernels 5 (gelu, first in the scan's order) and 6, patch 7).
evals() { python3 -c "
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(db.execute(\"SELECT COUNT(*) FROM evaluations e JOIN kernels k ON e.kernel = k.id WHERE k.name = 'gelu_forward_kernel'\").fetchone()[0])" "$1"; }
for phase in profile capture optimize patch verify; do
  newrepo "$tmp/k-$phase"
  export TUNE_LOG=$tmp/runs-$phase.log
  case $phase in
    profile | capture) (cd "$tmp/k-$phase" && KILL_IN=$phase tune "${opts[@]}" -- sh "$tmp/app.sh" >/dev/null 2>&1) ;;
    verify) (cd "$tmp/k-$phase" && KILL_IN=verify-off tune "${opts[@]}" -- sh "$tmp/app.sh" >/dev/null 2>&1) ;;
    optimize) (cd "$tmp/k-$phase" && KERNELSMITH_FAULTS=tune_kill:5 tune "${opts[@]}" -- sh "$tmp/app.sh" >/dev/null 2>&1) ;;
    patch) (cd "$tmp/k-$phase" && KERNELSMITH_FAULTS=tune_kill:7 tune "${opts[@]}" -- sh "$tmp/app.sh" >/dev/null 2>&1) ;;
  esac
  check "killed in $phase: exit 137" [ $? -eq 137 ]
  before=$(evals "$tmp/k-$phase/.kernelsmith/kernelsmith.db")
  (cd "$tmp/k-$phase" && tune --resume --json "$tmp/r-$phase.json" >"$tmp/r-$phase.out" 2>"$tmp/r-$phase.err")
  check "killed in $phase: the resumed tune finishes, exit 0" [ $? -eq 0 ]
  check "killed in $phase: the patch applies" bash -c "cd '$tmp/k-$phase' && git apply --check .kernelsmith/tune.patch"
  after=$(evals "$tmp/k-$phase/.kernelsmith/kernelsmith.db")
  check "killed in $phase: what finished is not done again" python3 - "$tmp/r-$phase.json" "$phase" "$TUNE_LOG" "$before" "$after" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
phase, log = sys.argv[2], [l.strip() for l in open(sys.argv[3]) if not l.startswith("capture asked")]
before, after = int(sys.argv[4]), int(sys.argv[5])
order = ["profile", "pick", "capture", "optimize", "patch", "verify"]
ph = d["phases"]
assert all(p["done"] for p in ph.values()), ph
for p in order[:order.index(phase)]:
    assert ph[p]["resumed"], (phase, p, ph)
for p in order[order.index(phase) + 1:]:
    assert not ph[p]["resumed"], (phase, p, ph)
runs = {"profile": ["profile", "profile", "capture", "verify-off", "verify-on"],
        "capture": ["profile", "capture", "capture", "verify-off", "verify-on"],
        "optimize": ["profile", "capture", "verify-off", "verify-on"],
        "patch": ["profile", "capture", "verify-off", "verify-on"],
        "verify": ["profile", "capture", "verify-off", "verify-off", "verify-on"]}[phase]
assert log == runs, (phase, log)
k = {x["kernel"]: x for x in d["kernels"]}
if phase == "optimize":
    # gelu (first in the scan's order) finished before the kill: read
    # back, not searched again
    assert k["gelu_forward_kernel"]["resumed"] and not k["saxpy_kernel"]["resumed"], k
    assert after == before and before > 0, (before, after)
if phase in ("patch", "verify"):
    assert all(x["resumed"] for x in k.values()) and after == before, (k, before, after)
assert k["saxpy_kernel"]["verdict"] == "faster", k
PY
done

# 3. A program that fails: one line, exit 1.
newrepo "$tmp/fail"
export TUNE_LOG=$tmp/runs-fail.log
(cd "$tmp/fail" && FAIL_IN=profile "$bin" -q tune "${opts[@]}" -- sh "$tmp/app.sh" >"$tmp/3.out" 2>"$tmp/3.err")
check "a failing program: exit 1" [ $? -eq 1 ]
check "... one line" [ "$(grep -vc '^app stdout' "$tmp/3.err")" -eq 1 ]
check "... saying so" grep -qx "kernelsmith-cc: error: the program failed in the profile run (exit status 3)" "$tmp/3.err"
check "... nothing on stdout" [ ! -s "$tmp/3.out" ]
# ... and one that fails with the variants: the table says so per kernel.
newrepo "$tmp/fail2"
(cd "$tmp/fail2" && FAIL_IN=verify-on tune "${opts[@]}" --json "$tmp/3b.json" -- sh "$tmp/app.sh" >"$tmp/3b.out" 2>"$tmp/3b.err")
check "failing with the variants: exit 1" [ $? -eq 1 ]
check "... the table's line for saxpy says failed" grep -Eq '^saxpy_kernel .*  failed: the program did not exit 0 in every run' "$tmp/3b.out"
check "... and stderr why, in one line" grep -q "error: the program failed with the variants (exit status 3) and not without them" "$tmp/3b.err"

# 4. No GPU (the loader's fault site stands for a missing driver): the
#    program is not run; the kernels are scanned, sliced and compiled.
newrepo "$tmp/nogpu"
export TUNE_LOG=$tmp/runs-nogpu.log
(cd "$tmp/nogpu" && KERNELSMITH_FAULTS=cuda_load:1 "$bin" tune -- sh "$tmp/app.sh" >"$tmp/4.out" 2>"$tmp/4.err")
check "no GPU: exit 0" [ $? -eq 0 ]
check "no GPU: one line" [ "$(wc -l <"$tmp/4.err")" -eq 1 ]
check "no GPU: says the rest needs a GPU" \
  grep -q "^kernelsmith-cc: tune: 2 kernels scanned, sliced and compiled for sm_90; the rest (running the program, the search, verifying) needs an NVIDIA GPU (" "$tmp/4.err"
check "no GPU: the program did not run" [ ! -s "$TUNE_LOG" ]

# 5. Usage errors: one line naming the option.
usage() { # name, want, args...
  local name=$1 want=$2
  shift 2
  tune "$@" >/dev/null 2>"$tmp/u.err"
  check "$name: exit 2" [ $? -eq 2 ]
  check "$name: one line naming it" bash -c "[ \$(wc -l <'$tmp/u.err') -le 2 ] && grep -q -- '$want' '$tmp/u.err'"
}
usage "no program" "no program to tune" --stand-in-judge
usage "--top 0" "--top takes" --top 0 -- true
usage "--min-share 101" "--min-share takes" --min-share 101 -- true
usage "--top with --min-share" "--top and --min-share" --top 2 --min-share 5 -- true
usage "--max-seconds x" "--max-seconds takes" --max-seconds x -- true
usage "--capture-limit 5X" "--capture-limit takes" --capture-limit 5X -- true
usage "--proposer magic" "--proposer is" --proposer magic -- true
usage "an unknown option" "unknown option .--frobnicate" --frobnicate -- true
usage "--resume with options" "--resume takes no options" --resume --top 3

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
