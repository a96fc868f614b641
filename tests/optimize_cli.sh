#!/usr/bin/env bash
# optimize and status end to end on a CPU: the README's main job without a
# GPU (scans, slices, compiles, then says the search needs one), a search
# with the deterministic stand-in judge (its numbers are not measurements),
# status, usage errors, and --resume after kill -9 at random moments: the
# resumed run finishes, and no variant is judged twice.
# usage: optimize_cli.sh KERNELSMITH_CC TESTDATA
set -u
bin=$1
data=$2
. "$(dirname "$0")/check.sh"

# 1. No GPU: everything but the search, then one sentence. (On a machine
#    with a GPU this would search; the CPU-only case is what is tested.)
if [ -z "${KS_HAVE_GPU:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  (cd "$tmp" && "$bin" optimize "$data/apps" >"$tmp/nogpu.out" 2>"$tmp/nogpu.err")
  rc=$?
  check "no GPU: exit 0" [ $rc -eq 0 ]
  check "no GPU: one sentence" grep -q "kernels scanned, sliced and compiled for sm_90; the search needs an NVIDIA GPU" "$tmp/nogpu.err"
  check "no GPU: every app kernel compiled" grep -q "^kernelsmith-cc: 14 kernels" "$tmp/nogpu.err"
fi

# 2. A search with the stand-in judge. (Each run below is given the
#    directories of its kernels only: scanning all the apps again for each
#    would cost seconds a run and test nothing more; section 1 scans them.)
"$bin" -q optimize --stand-in-judge --rounds 4 -k saxpy_kernel -k softmax_rows_kernel \
  --store "$tmp/s1" --json "$data/apps/saxpy" "$data/apps/softmax" >"$tmp/s1.json" 2>"$tmp/s1.err"
rc=$?
check "stand-in search: exit 0" [ $rc -eq 0 ]
check "stand-in search: JSON says not measured, two kernels optimized" python3 - "$tmp/s1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "kernelsmith-cc.optimize" and d["measured"] is False, d
ks = {k["kernel"]: k for k in d["kernels"]}
assert set(ks) == {"saxpy_kernel", "softmax_rows_kernel"}, ks.keys()
for k in ks.values():
    assert k["status"] == "optimized" and k["speedup"] > 1, k
    assert k["winner_file"] and open(k["winner_file"]).read().count("kernelsmith-variant:") == 1
# softmax's best chain uses the warp-per-row rewrite (the stand-in favours it)
assert "warp_rows" in ks["softmax_rows_kernel"]["techniques"], ks["softmax_rows_kernel"]
PY
"$bin" status --store "$tmp/s1" >"$tmp/status.out" 2>&1
check "status: the run is done" grep -Eq "^1 +.* done +evolve" "$tmp/status.out"
"$bin" status --store "$tmp/s1" --json >"$tmp/status.json" 2>&1
check "status --json: kernels with best variants" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["runs"][0]["status"] == "done"
assert all(k["best_speedup"] > 1 for k in d["kernels"]), d' "$tmp/status.json"
"$bin" optimize --resume --store "$tmp/s1" >/dev/null 2>"$tmp/resume-done.err"
check "resume of a finished run: refused" grep -q "nothing to resume" "$tmp/resume-done.err"

# A store the user may not write is read all the same (SQLite's WAL needs
# a writable directory for its shared memory; store.c reads such a store
# as immutable). For real: the store made read-only and read as a user
# who is not its owner (as root, 'nobody' through setpriv; skipped, saying
# why, where that cannot be done); and through the store's fault site,
# which stands for it on any machine.
ro=$tmp/ro/.kernelsmith
mkdir -p "$tmp/ro" "$tmp/ro-out" && cp "$tmp/s1/kernelsmith.db" "$ro.db" && mkdir "$ro" &&
  mv "$ro.db" "$ro/kernelsmith.db"
chmod 0444 "$ro/kernelsmith.db" && chmod 0555 "$ro" && chmod 0755 "$tmp" "$tmp/ro" && chmod 0777 "$tmp/ro-out"
as_reader=()
if [ "$(id -u)" = 0 ]; then
  if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
    as_reader=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  else
    as_reader=(skip)
    echo "skip read-only store as another user: running as root without setpriv or CAP_SETUID"
  fi
fi
if [ "${as_reader[0]:-}" != skip ]; then
  "${as_reader[@]}" "$bin" status --store "$ro" >"$tmp/ro.out" 2>&1
  check "read-only store: status reads it" grep -Eq "^1 +.* done +evolve" "$tmp/ro.out"
  "${as_reader[@]}" "$bin" export --trajectories "$tmp/ro-out/t.jsonl" --store "$ro" >/dev/null 2>"$tmp/ro.err"
  check "read-only store: export reads it" [ -s "$tmp/ro-out/t.jsonl" ]
  check "read-only store: nothing written beside it" [ "$(ls -A "$ro")" = kernelsmith.db ]
fi
chmod 0755 "$ro"
KERNELSMITH_FAULTS=store_shm:1 "$bin" status --store "$tmp/s1" >"$tmp/ro2.out" 2>&1
check "a store whose directory refuses its shared memory: status reads it" \
  grep -Eq "^1 +.* done +evolve" "$tmp/ro2.out"

# A damaged store: optimize refuses it in one line, and leaves it as it was.
mkdir "$tmp/bad"
python3 - "$tmp/s1/kernelsmith.db" "$tmp/bad/kernelsmith.db" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
page = len(data) // 4096 // 2 * 4096   # a page in the middle: the header stays whole
data[page:page + 4096] = bytes((i * 37 + 11) % 256 for i in range(4096))
open(sys.argv[2], "wb").write(data)
PY
cp "$tmp/bad/kernelsmith.db" "$tmp/bad.copy"
"$bin" -q optimize --stand-in-judge --rounds 1 -k saxpy_kernel --store "$tmp/bad" "$data/apps/saxpy" \
  >/dev/null 2>"$tmp/bad.err"
check "damaged store: optimize refuses it, exit 1" [ $? -eq 1 ]
check "damaged store: in one line, saying what to do" \
  grep -Eq "^kernelsmith-cc: error: .*/bad/kernelsmith.db: the results store is damaged \(.*\): move its directory away, or give optimize another --store, to start a new one$" "$tmp/bad.err"
check "damaged store: one line" [ "$(wc -l <"$tmp/bad.err")" -eq 1 ]
check "damaged store: left as it was" cmp -s "$tmp/bad/kernelsmith.db" "$tmp/bad.copy"

# The time fast kernels leave goes to a slow kernel the budget stopped
# early (here gelu, first in the order, at 200 ms per evaluation): its
# search continues after the others and gets more than its equal share.
# The budget counts from the start of the searches, and the check takes
# the fast kernels' own times from the JSON, so that a slow or loaded
# machine changes the numbers, not the verdict: gelu's first share is a
# third of the 24 s; what saxpy and gemv leave of the rest is its second
# pass, when that is at least 5 s.
KS_STANDIN_SLOW=gelu:200 "$bin" -q optimize --stand-in-judge --rounds 40 --patience 3 --max-seconds 24 \
  -k gelu_forward_kernel -k saxpy_kernel -k gemv_kernel --store "$tmp/s4" --json \
  "$data/apps/gelu" "$data/apps/saxpy" "$data/apps/gemv" \
  >"$tmp/s4.json" 2>/dev/null
check "time budget: a slow kernel gets the time the fast ones left" python3 -c '
import json, sys
ks = {k["kernel"]: k for k in json.load(open(sys.argv[1]))["kernels"]}
g, fast = ks["gelu_forward_kernel"], [ks["saxpy_kernel"], ks["gemv_kernel"]]
assert all(k["stopped_by"] != "budget" for k in fast), fast
used = sum(k["seconds"] for k in fast)
left = 24 - 24 / 3 - used
if left >= 5 + 1:    # a second pass: more than its equal share ...
    assert g["seconds"] > 24 / 3 + 2, (g["seconds"], used)
    if g["stopped_by"] == "budget":  # ... all the others left, unless it converged
        assert g["seconds"] > 24 - used - 2, (g["seconds"], used)
elif left < 5 - 1:   # none: the time left was under 5 s
    assert g["seconds"] < 24 / 3 + 2, (g["seconds"], used)
assert g["seconds"] + used < 24 + 3, (g["seconds"], used)  # and the budget holds' \
  "$tmp/s4.json"

# A run its time budget stopped is 'stopped', and --resume gives it more
# time (200 ms an evaluation: 2 s stop it on any machine).
KS_STANDIN_SLOW=saxpy:200 "$bin" -q optimize --stand-in-judge --max-seconds 2 -k saxpy_kernel \
  --store "$tmp/s3" "$data/apps/saxpy" >/dev/null 2>&1
"$bin" status --store "$tmp/s3" --json >"$tmp/s3a.json" 2>&1
KS_STANDIN_SLOW=saxpy:200 "$bin" -q optimize --resume --store "$tmp/s3" >/dev/null 2>&1
"$bin" status --store "$tmp/s3" --json >"$tmp/s3b.json" 2>&1
check "time budget: stopped, and a resume judges more" python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["runs"][0]["status"] == "stopped", a["runs"]
assert b["runs"][0]["evaluations"] > a["runs"][0]["evaluations"], (a["runs"], b["runs"])' \
  "$tmp/s3a.json" "$tmp/s3b.json"
"$bin" optimize --resume --rounds 3 --store "$tmp/s3" >/dev/null 2>"$tmp/resume-opts.err"
check "resume with other options: exit 2" [ $? -eq 2 ]

# 3. Usage errors.
"$bin" optimize --strategy greedy "$data/apps" >/dev/null 2>&1
check "bad strategy: exit 2" [ $? -eq 2 ]
"$bin" optimize --rounds 0 "$data/apps" >/dev/null 2>&1
check "zero rounds: exit 2" [ $? -eq 2 ]
"$bin" optimize --stand-in-judge -k no_such_kernel --store "$tmp/s0" "$data/apps/saxpy" >/dev/null 2>"$tmp/nokernel.err"
check "unknown kernel: exit 1 naming it" [ $? -eq 1 ] && grep -q "no_such_kernel" "$tmp/nokernel.err"

# 4. kill -9 at random moments, then --resume until done.
store="$tmp/s2"
args=(--stand-in-judge --rounds 12 --strategy beam -k gemv_kernel -k histogram_kernel
      -k transpose_naive_kernel --store "$store" "$data/apps/gemv" "$data/apps/histogram"
      "$data/apps/transpose")
# A kill can land before the run is stored (while kernels are sliced): then
# the command is started again; after that, --resume takes over.
for attempt in 1 2 3 4; do
  if "$bin" status --store "$store" 2>/dev/null | grep -Eq "^[0-9]+ +"; then
    "$bin" -q optimize --resume --store "$store" --json >"$tmp/resumed.json" 2>"$tmp/resumed.err" &
  else
    "$bin" -q optimize "${args[@]}" --json >"$tmp/resumed.json" 2>"$tmp/resumed.err" &
  fi
  pid=$!
  if [ $attempt -lt 4 ]; then
    sleep "$((RANDOM % 5 + 1)).$((RANDOM % 10))"
    kill -9 $pid 2>/dev/null
  fi
  wait $pid 2>/dev/null
  rc=$?
done
if grep -q "nothing to resume" "$tmp/resumed.err"; then
  # A kill landed after the run had finished: its outcome is in the store.
  "$bin" status --store "$store" --json >"$tmp/final-status.json"
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps({"kernels": [{"kernel": k["kernel"], "status": "optimized" if k.get("best_speedup", 0) > 1 else k["status"]} for k in d["kernels"]]}))'     "$tmp/final-status.json" >"$tmp/resumed.json"
fi
[ -s "$tmp/resumed.json" ] || { echo "last resume said:"; cat "$tmp/resumed.err"; }
check "resumed after kill -9: the run finished" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert {k["kernel"] for k in d["kernels"]} == {"gemv_kernel", "histogram_kernel", "transpose_naive_kernel"}, d
assert all(k["status"] == "optimized" for k in d["kernels"]), d' "$tmp/resumed.json"
check "resumed after kill -9: no variant judged twice (rechecks aside)" python3 - "$store/kernelsmith.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("select variant, count(*) from evaluations where variant is not null "
                  "and variant > 0 group by variant having count(*) > 1").fetchall()
# A winner is judged again on fresh inputs (up to three candidates per kernel,
# once per finished search); nothing else may appear twice.
assert len(rows) <= 3 * 3 * 2, rows
assert db.execute("pragma integrity_check").fetchone()[0] == "ok"
PY

echo "optimize_cli: $fails failed"
[ $fails -eq 0 ]
