#!/usr/bin/env bash
# What the judge learned, told by optimize with the stand-in judge: the race
# testdata/race/matvec_race.cu's code shows (one line under the kernel in
# the table, a `race` object in the JSON, the kernel row's insight column),
# the race its runs show when the stand-in makes the original's two runs
# differ (KS_STANDIN_RACE) and what the search then did, the same read back
# from the store by a resumed run, and no race for the kernels that guard
# their store.
# usage: race_cli.sh KERNELSMITH_CC TESTDATA
set -u
bin=$1
data=$2
. "$(dirname "$0")/check.sh"

# 1. Statically: the code alone (the stand-in's runs show nothing).
"$bin" -q optimize --stand-in-judge --rounds 2 --store "$tmp/s1" "$data/race" >"$tmp/s1.out" 2>"$tmp/s1.err"
check "static: exit 0" [ $? -eq 0 ]
check "static: one race line under the kernel" grep -qx "  race: y\[i\] written by 8 threads per index (blockDim.y = 8, index independent of threadIdx.y); none of [0-9]* variants was refused for a different result" "$tmp/s1.out"
check "static: the line follows matvec_race's row" python3 - "$tmp/s1.out" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
i = next(i for i, l in enumerate(lines) if l.startswith("matvec_race "))
assert lines[i + 1].startswith("  race: y[i] written by 8 threads"), lines
assert sum(l.startswith("  race:") for l in lines) == 1, lines
PY

# 2. Dynamically: the original's two runs differ, and half the variants
#    come out WRONG as they would against a racing original.
KS_STANDIN_RACE=matvec_race "$bin" -q optimize --stand-in-judge --rounds 3 --store "$tmp/s2" \
  --json "$data/race" >"$tmp/s2.json" 2>"$tmp/s2.err"
check "dynamic: exit 0" [ $? -eq 0 ]
check "dynamic: race and bound members, the runs' evidence and the search's refusals" python3 - "$tmp/s2.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ks = {k["kernel"]: k for k in d["kernels"]}
assert set(ks) == {"matvec_race"}, ks.keys()
k = ks["matvec_race"]
assert "bound" in k and k["bound"] is None, k   # the stand-in measures nothing
r = k["race"]
assert r["shown_by_code"] and r["shown_by_runs"], r
assert r["store"] == "y[i]" and r["buffer"] == "y" and r["op"] == "+=", r
assert r["independent_of"] == "threadIdx.y" and r["writers_per_index"] == 8, r
assert r["launch"] == {"grid": [64, 1, 1], "block": [32, 8, 1]}, r
assert r["original_runs_differed"] == r["seeds_checked"] > 0, r
assert r["variants_wrong"] == k["wrong"] > 0, (r, k["wrong"])
assert r["variants_evaluated"] == k["evaluated"], (r, k["evaluated"])
assert r["search"] == "%d of %d variants refused WRONG: their results differ as the racing original's do" % (k["wrong"], k["evaluated"]), r
assert r["summary"].startswith("y[i] written by 8 threads per index (blockDim.y = 8, index independent of threadIdx.y); the original's two runs on the same inputs differed on "), r
PY
check "dynamic: the store's kernel row keeps it" python3 - "$tmp/s2/kernelsmith.db" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("PRAGMA user_version").fetchone()[0] >= 4  # the insight column came in 4
(text,) = db.execute("SELECT insight FROM kernels WHERE name = 'matvec_race'").fetchone()
d = json.loads(text)
assert d["race"]["store"] == "y[i]" and d["race"]["shown_by_runs"], d
PY
# A resumed run that finds the kernel done reads what was learned from the
# store (the store is the one record).
python3 - "$tmp/s2/kernelsmith.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE runs SET status = 'interrupted'")
db.commit()
PY
KS_STANDIN_RACE=matvec_race "$bin" -q optimize --resume --store "$tmp/s2" >"$tmp/s2r.out" 2>"$tmp/s2r.err"
check "resumed (with the run's --json): the race from the store" python3 - "$tmp/s2.json" "$tmp/s2r.out" <<'PY'
import json, sys
first, again = (json.load(open(p))["kernels"][0] for p in sys.argv[1:])
assert again["rounds"] == 0 and again["race"] == first["race"], (first["race"], again)
PY

# 3. The guarded kernels, named, with a spec the test writes: no race.
mkdir -p "$tmp/guarded"
sed -e 's/^__global__ void matvec_guarded/\/* kernelsmith:\n *   size timed: n = 2048\n *   size small: n = 100\n *   in    a[n * n] uniform(-1, 1)\n *   in    x[n] uniform(-1, 1)\n *   inout y[n] uniform(-1, 1) tol(atol = 1e-3, rtol = 1e-3)\n *   launch grid = ceil_div(n, 32), block = dim3(32, 8)\n *\/\n&/' \
  "$data/race/matvec_race.cu" >"$tmp/guarded/m.cu"
"$bin" -q optimize --stand-in-judge --rounds 1 -k matvec_guarded --store "$tmp/s3" --json "$tmp/guarded" >"$tmp/s3.json" 2>"$tmp/s3.err"
check "guarded: exit 0" [ $? -eq 0 ]
check "guarded: race null" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
(k,) = d["kernels"]
assert k["kernel"] == "matvec_guarded" and k["race"] is None, k' "$tmp/s3.json"

[ $fails -eq 0 ]
