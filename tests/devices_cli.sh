#!/usr/bin/env bash
# optimize --devices on a CPU, with the stand-in judge as each worker: one
# worker and three (on one device, as two workers on one GPU would be)
# make the same search for a seed and an evaluation budget (the same
# winners, the same evaluations in the same order); the store records the
# device and worker of each evaluation and status shows them; a worker
# killed mid-run (fault site standin_worker) costs its candidate while the
# others go on; an --mpi run's ranks and hosts, as status shows them;
# kill -9 and --resume with two workers; usage errors.
# usage: devices_cli.sh KERNELSMITH_CC TESTDATA
set -u
bin=$1
data=$2
. "$(dirname "$0")/check.sh"

apps=("$data/apps/saxpy" "$data/apps/softmax")
opt() { # store, extra options... ($quiet: the verbosity flag, default -q)
  local store=$1
  shift
  "$bin" ${quiet--q} optimize --stand-in-judge --rounds 4 --max-evals 20 --seed 5 \
    -k saxpy_kernel -k softmax_rows_kernel --store "$tmp/$store" --json "$@" "${apps[@]}" \
    >"$tmp/$store.json" 2>"$tmp/$store.err"
}

# What a run decided: each kernel's winner, and every evaluation in the
# order the store received it (variant hash, verdict, speedup).
decided() {
  python3 - "$tmp/$1.json" "$tmp/$1/kernelsmith.db" <<'PY'
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))
for k in sorted(d["kernels"], key=lambda k: k["kernel"]):
    print("winner", k["kernel"], k["status"], k["techniques"], k["speedup"], k["evaluated"])
db = sqlite3.connect(sys.argv[2])
for row in db.execute("SELECT k.name, v.hash, e.verdict, e.speedup FROM evaluations e "
                      "JOIN kernels k ON k.id = e.kernel LEFT JOIN variants v ON v.id = e.variant "
                      "ORDER BY e.id"):
    print("eval", *row)
PY
}

# 1. One worker and three: the same search.
opt one --devices 0
check "--devices 0: exit 0" [ $? -eq 0 ]
opt three --devices 0,0,0
check "--devices 0,0,0: exit 0" [ $? -eq 0 ]
decided one >"$tmp/one.decided"
decided three >"$tmp/three.decided"
check "one and three workers: the same winners and evaluations" \
  diff -u "$tmp/one.decided" "$tmp/three.decided"
check "... both kernels optimized" [ "$(grep -c '^winner .* optimized ' "$tmp/one.decided")" = 2 ]
check "... 20 evaluations each (the budget)" \
  [ "$(grep -c '^winner .* 20$' "$tmp/three.decided")" = 2 ]
# --devices 0 is the run without the option, stored the same way.
opt plain
decided plain >"$tmp/plain.decided"
check "--devices 0 decides as no --devices" diff -u "$tmp/plain.decided" "$tmp/one.decided"
check "... and its run's device text is the same" python3 - "$tmp/plain/kernelsmith.db" "$tmp/one/kernelsmith.db" <<'PY'
import sqlite3, sys
a, b = (sqlite3.connect(f).execute("SELECT device FROM runs").fetchall() for f in sys.argv[1:])
assert a == b == [("stand-in judge (no GPU)",)], (a, b)
PY

# 2. Who judged: three workers on devices 0, 1 and 2.
KS_STANDIN_SLOW=__global__:5 opt spread --devices 0,1,2
check "--devices 0,1,2: exit 0" [ $? -eq 0 ]
check "store: every evaluation's worker and device" python3 - "$tmp/spread/kernelsmith.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
(missing,) = db.execute("SELECT count(*) FROM evaluations e LEFT JOIN eval_devices d "
                        "ON d.evaluation = e.id WHERE d.evaluation IS NULL").fetchone()
assert missing == 0, missing
rows = db.execute("SELECT worker, device, count(*) FROM eval_devices GROUP BY 1, 2").fetchall()
assert all(w == d for w, d, _ in rows), rows
assert len(rows) >= 2, rows   # the work was shared
PY
"$bin" status --store "$tmp/spread" >"$tmp/spread.status" 2>&1
check "status: the run's device text names the workers" \
  grep -q "stand-in judge (no GPU), 3 workers on devices 0,1,2" "$tmp/spread.status"
check "status: how many each worker judged" grep -Eq "judged by worker 0 \(device 0\): [0-9]+" "$tmp/spread.status"
"$bin" status --store "$tmp/spread" --json >"$tmp/spread.sjson" 2>&1
check "status --json: workers with devices and counts" python3 - "$tmp/spread.sjson" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
ws = r["workers"]
assert sum(w["evaluations"] for w in ws) == r["evaluations"], r
assert all(w["worker"] == w["device"] for w in ws), ws
PY
"$bin" status --store "$tmp/one" >"$tmp/one.status" 2>&1
check "status: one worker, no workers line" sh -c "! grep -q 'judged by' '$tmp/one.status'"

# An --mpi run's store, as rank 0 writes it (an eval_ranks row per
# evaluation; here each worker's evaluations as made by a rank of its own):
# status names each rank and its host, one line each, and --json too.
cp -r "$tmp/spread" "$tmp/mpi"
python3 - "$tmp/mpi/kernelsmith.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("INSERT INTO eval_ranks SELECT evaluation, worker, 'node-' || char(97 + worker) "
           "FROM eval_devices")
db.commit()
PY
"$bin" status --store "$tmp/mpi" >"$tmp/mpi.status" 2>&1
check "status (--mpi): who judged, one line per rank" grep -Eq \
  "^        rank 1 on node-b: device 1, worker 1: [0-9]+ evaluations?$" "$tmp/mpi.status"
check "... under 'judged by:'" grep -q "^      judged by:$" "$tmp/mpi.status"
"$bin" status --store "$tmp/mpi" --json >"$tmp/mpi.sjson" 2>&1
check "status --json (--mpi): workers with rank and host" python3 - "$tmp/mpi.sjson" "$tmp/spread.sjson" <<'PY'
import json, sys
ws = json.load(open(sys.argv[1]))["runs"][0]["workers"]
assert all(w["rank"] == w["worker"] and w["host"] == "node-" + "abc"[w["worker"]] for w in ws), ws
plain = json.load(open(sys.argv[2]))["runs"][0]["workers"]
assert all("rank" not in w and "host" not in w for w in plain), plain
assert [{k: w[k] for k in ("worker", "device", "evaluations")} for w in ws] == plain, (ws, plain)
PY

# 3. A worker killed mid-run: its candidate is lost (CRASH, the reason
#    naming it), the others go on (the next kernel's search too), and the
#    run ends as usual.
KERNELSMITH_FAULTS=standin_worker:9 quiet= opt killed --devices 0,1
check "killed worker: exit 0" [ $? -eq 0 ]
check "... said once on stderr" [ "$(grep -c 'worker [01] (device [01]) failed and left the pool' "$tmp/killed.err")" = 1 ]
check "... its candidate lost, the others judged" python3 - "$tmp/killed/kernelsmith.db" "$tmp/killed.json" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
lost = db.execute("SELECT e.id, d.worker FROM evaluations e JOIN eval_devices d ON d.evaluation = e.id "
                  "WHERE e.verdict = 'CRASH' AND e.reason LIKE '%left the pool%'").fetchall()
assert len(lost) == 1, lost
eid, dead = lost[0]
after = db.execute("SELECT count(*), count(DISTINCT d.worker) FROM evaluations e "
                   "JOIN eval_devices d ON d.evaluation = e.id WHERE e.id > ?", (eid,)).fetchone()
assert after[0] > 5 and after[1] == 1, after
(dead_after,) = db.execute("SELECT count(*) FROM evaluations e JOIN eval_devices d "
                           "ON d.evaluation = e.id WHERE e.id > ? AND d.worker = ?",
                           (eid, dead)).fetchone()
assert dead_after == 0, dead_after   # gone for the rest of the run, next kernel included
d = json.load(open(sys.argv[2]))
assert all(k["status"] == "optimized" for k in d["kernels"]), d["kernels"]
PY
# With one worker its death is the run's, as it always was.
KERNELSMITH_FAULTS=standin_worker:9 opt killed1 --devices 0
check "killed only worker: exit 1" [ $? -eq 1 ]
check "... saying why" grep -q "died (injected fault standin_worker)" "$tmp/killed1.err"

# 4. kill -9 in the middle of a round judged by two workers, then --resume:
#    the run finishes, nothing finished is judged twice, the store is whole.
KS_STANDIN_SLOW=__global__:40 "$bin" -q optimize --stand-in-judge --devices 0,0 --rounds 4 \
  --max-evals 20 --seed 5 -k saxpy_kernel -k softmax_rows_kernel --store "$tmp/k9" \
  "${apps[@]}" >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 600); do # up to 60 s for the first evaluations to be stored
  n=$(python3 -c 'import sqlite3,sys
try: print(sqlite3.connect(sys.argv[1]).execute("select count(*) from evaluations").fetchone()[0])
except Exception: print(0)' "$tmp/k9/kernelsmith.db" 2>/dev/null)
  [ "${n:-0}" -ge 8 ] && break
  sleep 0.1
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
"$bin" -q optimize --resume --store "$tmp/k9" --json >"$tmp/k9.json" 2>"$tmp/k9.err"
check "killed with two workers, resumed: exit 0" [ $? -eq 0 ]
check "... the run finished, no variant judged twice (rechecks aside)" python3 - "$tmp/k9/kernelsmith.db" "$tmp/k9.json" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
d = json.load(open(sys.argv[2]))
assert all(k["status"] == "optimized" for k in d["kernels"]), d["kernels"]
assert db.execute("SELECT status FROM runs").fetchone()[0] == "done"
twice = db.execute("SELECT variant, count(*) FROM evaluations WHERE variant IS NOT NULL "
                   "GROUP BY variant HAVING count(*) > 1").fetchall()
assert len(twice) <= 2 * 3, twice   # the winners' rechecks, up to three per kernel
assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
(missing,) = db.execute("SELECT count(*) FROM evaluations e LEFT JOIN eval_devices d "
                        "ON d.evaluation = e.id WHERE d.evaluation IS NULL").fetchone()
assert missing == 0, missing
PY

# 5. Usage errors.
"$bin" optimize --stand-in-judge --devices 0,x "${apps[0]}" >/dev/null 2>"$tmp/u1.err"
check "--devices 0,x: usage error" [ $? -eq 2 ]
check "... saying what it takes" grep -q "devices takes all or CUDA devices" "$tmp/u1.err"
"$bin" optimize --stand-in-judge --devices 0 --device 1 "${apps[0]}" >/dev/null 2>"$tmp/u2.err"
check "--device with --devices: usage error" [ $? -eq 2 ]
"$bin" optimize --stand-in-judge --devices 256 "${apps[0]}" >/dev/null 2>&1
check "--devices 256: usage error" [ $? -eq 2 ]

"$bin" tune --stand-in-judge --devices 0,x -- true >/dev/null 2>"$tmp/u3.err"
check "tune --devices 0,x: usage error" [ $? -eq 2 ]

echo "$fails failure(s)"
[ $fails -eq 0 ]
