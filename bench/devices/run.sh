#!/usr/bin/env bash
# optimize --devices on a GPU machine, over the kernels of testdata/apps,
# with one seed and one evaluation budget per kernel:
#  1. --devices 0 and --devices 0,0 (two workers on one GPU) make the same
#     search: the same evaluations in the same order (variant hashes) and
#     the same winners; verdicts are measurements, so the table also counts
#     the evaluations whose verdict differs (noise at the FAST/SAME edge);
#  2. evaluations per minute with 1 and 2 workers on one GPU, and, where the
#     machine has two or more GPUs, with --devices 0,1 (the issue's target:
#     >= 1.8x the evaluations per minute of one GPU, the same geomean
#     speedup);
#  3. the same with `mpirun -np 2 ... optimize --mpi` (two ranks on one GPU,
#     and on two GPUs where there are two), where mpirun is found;
# Prints a table and writes bench/results/devices-<gpu>-<date>.json.
# Needs an NVIDIA GPU (exit 77 without one).
#   KS_BIN (default build/cli/kernelsmith-cc), KS_RESULTS (default
#   bench/results), KS_MAX_EVALS (per kernel, default 60), KS_SEED (default
#   1), KS_OPT_ARGS (more options), KS_KEEP_STORES (keep the stores there).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${KS_BIN:-build/cli/kernelsmith-cc}
out=${KS_RESULTS:-bench/results}
evals=${KS_MAX_EVALS:-60}
seed=${KS_SEED:-1}

gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
fi
if [ "$gpus" -lt 1 ]; then
  echo "bench/devices: no NVIDIA GPU here (nvidia-smi lists none): skipped" >&2
  exit 77
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stores=${KS_KEEP_STORES:-$tmp}
mkdir -p "$stores"

configs=("one:0" "two_on_one:0,0")
[ "$gpus" -ge 2 ] && configs+=("two_gpus:0,1")
# optimize --mpi: two ranks, each on the GPU of its local rank (both on GPU
# 0 of a one-GPU machine), where mpirun is found (KS_MPIRUN names another).
mpirun=${KS_MPIRUN:-$(command -v mpirun || true)}
if [ -n "$mpirun" ]; then
  configs+=("mpi_two_ranks:rank")
  [ "$gpus" -ge 2 ] && configs+=("mpi_two_gpus:rank")
fi
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
for c in "${configs[@]}"; do
  name=${c%%:*}
  devs=${c#*:}
  rm -rf "${stores:?}/$name"
  launch=()
  devopt=(--devices "$devs")
  if [ "$devs" = rank ]; then
    launch=("$mpirun" "${root[@]}" --enable-recovery -np 2 -x PATH -x LD_LIBRARY_PATH)
    [ -n "${KERNELSMITH_CLANG_RESOURCE_DIR:-}" ] && launch+=(-x KERNELSMITH_CLANG_RESOURCE_DIR)
    devopt=(--mpi)
  fi
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  "${launch[@]}" "$bin" -q optimize --json --store "$stores/$name" "${devopt[@]}" --seed "$seed" \
    --rounds 100000 --max-evals "$evals" ${KS_OPT_ARGS:-} testdata/apps >"$tmp/$name.json" || true
  end=$(date +%s.%N)
  echo "$name $devs $start $end" >>"$tmp/runs.txt"
done

python3 - "$tmp" "$stores" "$out" "$evals" "$seed" <<'PY'
import datetime, json, math, os, sqlite3, sys
tmp, stores, out, evals, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
runs = [l.split() for l in open(f"{tmp}/runs.txt")]

def load(name):
    d = json.load(open(f"{tmp}/{name}.json"))
    db = sqlite3.connect(f"{stores}/{name}/kernelsmith.db")
    seq = db.execute("SELECT k.name, v.hash, e.verdict FROM evaluations e JOIN kernels k "
                     "ON k.id = e.kernel JOIN variants v ON v.id = e.variant ORDER BY e.id").fetchall()
    win = dict(db.execute("SELECT k.name, v.hash FROM kernels k LEFT JOIN variants v "
                          "ON v.id = k.winner").fetchall())
    workers = db.execute("SELECT coalesce(r.rank, 0) * 1000 + d.worker, d.device, count(*) "
                         "FROM eval_devices d JOIN evaluations e ON e.id = d.evaluation "
                         "LEFT JOIN eval_ranks r ON r.evaluation = e.id "
                         "WHERE e.variant IS NOT NULL GROUP BY 1, 2 ORDER BY 1").fetchall()
    ks = [k for k in d["kernels"] if "speedup" in k]
    run_evals = sum(k["evaluated"] - k.get("same_code", 0) for k in ks)
    secs = sum(k.get("seconds", 0) for k in ks)
    speedups = [max(k["speedup"], 1.0) for k in ks]
    geo = math.exp(sum(map(math.log, speedups)) / len(speedups)) if speedups else 0
    return {"json": d, "seq": seq, "winners": win, "workers": workers, "kernels": len(ks),
            "evaluations": run_evals, "search_seconds": secs,
            "evals_per_minute": run_evals * 60 / secs if secs else 0, "geomean": geo,
            "device": d.get("device", "")}

res = {name: dict(load(name), devices=devs, wall_seconds=float(end) - float(start))
       for name, devs, start, end in runs}
one = res["one"]
rows = []
for name, r in res.items():
    same_seq = [(k, h) for k, h, _ in r["seq"]] == [(k, h) for k, h, _ in one["seq"]]
    verdict_diff = sum(a[2] != b[2] for a, b in zip(r["seq"], one["seq"]))
    same_win = sum(r["winners"].get(k) == h for k, h in one["winners"].items())
    r.update(same_evaluations=same_seq, verdicts_differing=verdict_diff,
             same_winners=same_win, winners_total=len(one["winners"]),
             speedup_vs_one=r["evals_per_minute"] / one["evals_per_minute"]
             if one["evals_per_minute"] else 0)
    rows.append((name, r["devices"], r["kernels"], r["evaluations"], f'{r["evals_per_minute"]:.1f}',
                 f'{r["speedup_vs_one"]:.2f}x', f'{r["geomean"]:.3f}x',
                 "yes" if same_seq else "NO", verdict_diff,
                 f'{same_win}/{len(one["winners"])}',
                 " ".join(f"r{w // 1000}w{w % 1000}@{d}:{n}" for w, d, n in r["workers"])))
head = ("config", "devices", "kernels", "evals", "evals/min", "vs one", "geomean",
        "same evals", "verdicts differ", "same winners", "per worker")
w = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
for row in (head, *rows):
    print("  ".join(str(x).ljust(n) for x, n in zip(row, w)))
label = (one["device"].split(",")[0].replace("NVIDIA ", "").replace(" ", "-").lower()
         or "gpu")
doc = {"schema": "kernelsmith-cc.bench.devices", "version": 1,
       "date": datetime.date.today().isoformat(), "device": one["device"], "seed": seed,
       "max_evals_per_kernel": evals,
       "configs": {n: {k: v for k, v in r.items() if k not in ("json", "seq", "winners")}
                   for n, r in res.items()}}
os.makedirs(out, exist_ok=True)
path = f"{out}/devices-{label}-{doc['date']}.json"
json.dump(doc, open(path, "w"), indent=2)
print(f"wrote {path}")
PY
