#!/usr/bin/env bash
# `tune` alone against `mpirun -np N ... tune --mpi` on one program, the same
# seed and rounds: the winners, the evaluations each rank judged and the
# wall time of each. The program is built through the compiler launcher and
# run in one command, as docs/tune.md says.
#
#   bench/tune/mpi.sh [APP_DIR]        (default testdata/apps/gemv)
#
# KS_BIN (default build/cli/kernelsmith-cc), KS_NP (2), KS_ROUNDS (4),
# KS_SEED (5), KS_RESULTS (a directory for the JSON and logs; default
# bench/out/tune-mpi), KS_MPIRUN (default mpirun), NVCC. Prints a table and
# writes tune-mpi.json there.
set -u
cd "$(dirname "$0")/../.."
app=$(realpath "${1:-testdata/apps/gemv}")
ks=$(realpath "${KS_BIN:-build/cli/kernelsmith-cc}")
np=${KS_NP:-2}
rounds=${KS_ROUNDS:-4}
seed=${KS_SEED:-5}
out=${KS_RESULTS:-bench/out/tune-mpi}
mpirun=${KS_MPIRUN:-mpirun}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
mkdir -p "$out"
out=$(realpath "$out")
name=$(basename "$app")
src=$(cd "$app" && ls *.cu | head -1)
rows=""
for mode in one mpi; do
  w=$(mktemp -d)
  cp -r "$app" "$w/$name"
  [ -d "$app/../common" ] && cp -r "$app/../common" "$w/common"
  cd "$w/$name"
  build="$ks $nvcc -O3 -arch=sm_90 -std=c++17 -o prog $src"
  cmd=("$ks" tune --rounds "$rounds" --seed "$seed" --json "$w/tune.json" . -- sh -c "$build && ./prog")
  t0=$(date +%s.%N)
  if [ $mode = mpi ]; then
    "$mpirun" --allow-run-as-root --oversubscribe --enable-recovery -np "$np" \
      "${cmd[0]}" tune --mpi "${cmd[@]:2}" >"$out/$mode.out" 2>"$out/$mode.err"
  else
    "${cmd[@]}" >"$out/$mode.out" 2>"$out/$mode.err"
  fi
  rc=$?
  t1=$(date +%s.%N)
  # The evaluations each rank judged, from the store rank 0 owns.
  ranks=$(python3 - <<'PY'
import sqlite3
try:
    db = sqlite3.connect(".kernelsmith/kernelsmith.db")
    print(" ".join("%d:%d" % r for r in db.execute(
        "SELECT COALESCE(r.rank, 0), COUNT(*) FROM evaluations e "
        "LEFT JOIN eval_ranks r ON r.evaluation = e.id GROUP BY 1 ORDER BY 1")))
except Exception as e:
    print("?")
PY
)
  cp "$w/tune.json" "$out/$mode.tune.json" 2>/dev/null
  row=$(python3 - "$mode" "$rc" "$t0" "$t1" "$w/tune.json" "$ranks" <<'PY'
import json, sys
mode, rc, t0, t1, tj, ranks = sys.argv[1:7]
try:
    t = json.load(open(tj))
except Exception:
    t = {}
print(json.dumps({"mode": mode, "rc": int(rc), "seconds": round(float(t1) - float(t0), 1),
                  "evals_by_rank": ranks.strip(), "failure": t.get("failure"),
                  "kernels": [{k: x.get(k) for k in ("kernel", "search_speedup", "program_speedup",
                                                     "techniques", "verdict", "evaluated")}
                              for x in t.get("kernels", [])]}))
PY
)
  rows="$rows$row,"
  cd - >/dev/null
  rm -rf "$w"
done
python3 - "$out" "[${rows%,}]" "$np" "$rounds" "$seed" "$name" <<'PY'
import json, sys
out, rows, np, rounds, seed, name = sys.argv[1:7]
rows = json.loads(rows)
print("%-5s %3s %8s  %-12s %s" % ("mode", "rc", "seconds", "evals/rank", "winners"))
for r in rows:
    w = "; ".join("%s %s %s" % (k["kernel"], k["search_speedup"], k["techniques"]) for k in r["kernels"])
    print("%-5s %3d %8.1f  %-12s %s" % (r["mode"], r["rc"], r["seconds"], r["evals_by_rank"] or "-", w))
same = len(rows) == 2 and [k["techniques"] for k in rows[0]["kernels"]] == \
    [k["techniques"] for k in rows[1]["kernels"]]
print("same winners: %s" % ("yes" if same else "NO"))
json.dump({"program": name, "np": int(np), "rounds": int(rounds), "seed": int(seed),
           "runs": rows, "same_winners": same}, open(out + "/tune-mpi.json", "w"), indent=1)
PY
