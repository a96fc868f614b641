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

. "$(dirname "$0")/tune_app.sh"
: "$fake_cuda"

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
