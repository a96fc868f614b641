#!/usr/bin/env bash
# optimize's targets, on a GPU machine, over the kernels of testdata/apps:
#  1. rules only (no LLM): geometric-mean speedup >= 1.5x over the naive
#     versions, no kernel slower, no incorrect variant accepted (every winner
#     is judged once more by a separate `check`);
#  2. memory-bound kernels reach >= 85% of the measured device-to-device copy
#     bandwidth;
#  3. >= 100 candidates fully evaluated per minute on one GPU;
#  4. a tuning-only baseline (launch configuration and unroll factors alone,
#     as classic autotuners do) side by side, so the rewrites' gain is visible.
# Prints a table and writes bench/results/optimize-<label>-<date>.json.
#   KS_BIN (default build/cli/kernelsmith-cc), KS_RESULTS (default
#   bench/results), KS_ROUNDS (default 40), KS_RULES_SECONDS / KS_TUNING_SECONDS
#   (wall budgets of the two runs; default none), KS_OPT_ARGS (more options,
#   e.g. "--patience 8"). The table's "rounds" column says how many rounds
#   each search ran and what stopped it (rounds, patience, exhausted, budget).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${KS_BIN:-build/cli/kernelsmith-cc}
out=${KS_RESULTS:-bench/results}
rounds=${KS_ROUNDS:-40}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The stores hold every variant and verdict (why a variant was WRONG, ...):
# kept where KS_KEEP_STORES says, else dropped with the rest.
stores=${KS_KEEP_STORES:-$tmp}
mkdir -p "$stores"
budget() { [ -n "${1:-}" ] && echo "--max-seconds $1" || true; }

start=$(date +%s.%N)
# shellcheck disable=SC2046,SC2086
"$bin" -q optimize --json --store "$stores/rules" --rounds "$rounds" $(budget "${KS_RULES_SECONDS:-}") \
  ${KS_OPT_ARGS:-} testdata/apps >"$tmp/rules.json" || true
mid=$(date +%s.%N)
# shellcheck disable=SC2046,SC2086
"$bin" -q optimize --json --store "$stores/tuning" --proposer tuning --rounds "$rounds" \
  $(budget "${KS_TUNING_SECONDS:-}") ${KS_OPT_ARGS:-} testdata/apps >"$tmp/tuning.json" || true
end=$(date +%s.%N)

# Every winner judged again by a separate process, on fresh inputs.
: >"$tmp/rechecks.txt"
python3 -c '
import json, sys
for k in json.load(open(sys.argv[1]))["kernels"]:
    if k.get("winner_file"):
        print(k["kernel"], k["winner_file"])
' "$tmp/rules.json" | while read -r kernel file; do
  v=$("$bin" -q check "$kernel" --variant "$file" --seed 99 --json --cache-dir "$tmp/cache" \
      testdata/apps 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["verdict"])' \
      || echo ERROR)
  echo "$kernel $v" >>"$tmp/rechecks.txt"
done

# The device's copy bandwidth (the judge measures and caches it).
"$bin" -q bench saxpy_kernel --json --cache-dir "$tmp/cache" testdata/apps/saxpy >"$tmp/bench.json" || true

python3 - "$tmp" "$out" "${KS_LABEL:-}" "$start" "$mid" "$end" <<'PY'
import datetime, json, math, os, sys
tmp, out, label = sys.argv[1], sys.argv[2], sys.argv[3]
start, mid, end = map(float, sys.argv[4:7])
rules = json.load(open(f"{tmp}/rules.json"))
tuning = json.load(open(f"{tmp}/tuning.json"))
rechecks = dict(l.split() for l in open(f"{tmp}/rechecks.txt") if l.strip())
bench = {}
try:
    bench = json.load(open(f"{tmp}/bench.json"))
except Exception:
    pass
ceil = (bench.get("device") or {}).get("measured_bandwidth") or 0
tk = {k["kernel"]: k for k in tuning["kernels"]}
# Memory-bound: the original moves its bytes at more than a quarter of the
# device's copy bandwidth, or the spec gives no FLOP count and the kernel
# is elementwise; the table marks them.
memory_bound = {"saxpy_kernel", "gelu_forward_kernel", "transpose_naive_kernel",
                "jacobi5_kernel", "add_block_offsets_kernel"}
rows, logs, tlogs, slower, evals, secs = [], [], [], [], 0, 0.0
for k in rules["kernels"]:
    if "speedup" not in k:
        rows.append((k["kernel"], "-", "-", "-", "-", "-", "-", k["status"] + ": " + k.get("note", "")))
        continue
    t = tk.get(k["kernel"], {})
    s, ts = k["speedup"], t.get("speedup", 1.0)
    logs.append(math.log(s)); tlogs.append(math.log(ts))
    if s < 1: slower.append(k["kernel"])
    # Only evaluations that ran on the GPU count (same_code ones reused a verdict).
    evals += k["evaluated"] - k.get("same_code", 0); secs += k["seconds"]
    bw = k.get("bandwidth_fraction", 0)
    rows.append((k["kernel"], f"{k['baseline_ms']:.4f}", f"{k['best_ms']:.4f}", f"{s:.2f}x",
                 f"{ts:.2f}x", f"{100*bw:.0f}%" + (" mb" if k["kernel"] in memory_bound else ""),
                 f"{k.get('rounds', 0)} {k.get('stopped_by', '')}".strip(),
                 (k["techniques"] or "-") + (f"  [recheck {rechecks.get(k['kernel'], '-')}]" if k.get("winner_file") else "")))
geo = math.exp(sum(logs) / len(logs)) if logs else 0
tgeo = math.exp(sum(tlogs) / len(tlogs)) if tlogs else 0
bad = [k for k, v in rechecks.items() if v not in ("FAST", "SAME")]
mb = [k for k in rules["kernels"] if k["kernel"] in memory_bound and "speedup" in k]
mb_ok = [k["kernel"] for k in mb if k.get("bandwidth_fraction", 0) >= 0.85]
rate = evals / (secs / 60) if secs else 0
print(f"device: {rules.get('device', '?')}")
print(f"{'kernel':30} {'base ms':>9} {'best ms':>9} {'rules':>7} {'tuning':>7} {'roofline':>9}  {'rounds':16} techniques")
for r in rows:
    print(f"{r[0]:30} {r[1]:>9} {r[2]:>9} {r[3]:>7} {r[4]:>7} {r[5]:>9}  {r[6]:16} {r[7]}")
targets = [
    ("geomean speedup, rules", f"{geo:.2f}x (tuning only: {tgeo:.2f}x)", ">= 1.5x", geo >= 1.5),
    ("kernels slower than the original", f"{len(slower)}", "0", not slower),
    ("winners failing a separate recheck", f"{len(bad)} of {len(rechecks)}", "0", not bad),
    ("memory-bound kernels >= 85% of copy bw", f"{len(mb_ok)} of {len(mb)}", "all", len(mb_ok) == len(mb)),
    ("candidates evaluated per minute", f"{rate:.0f}", ">= 100", rate >= 100),
]
print()
for name, value, want, ok in targets:
    print(f"{name:42} {value:34} {want:9} {'PASS' if ok else 'FAIL'}")
dev = (rules.get("device") or "gpu").split(",")[0]
label = label or dev.replace("NVIDIA ", "").replace(" ", "-").lower()
date = datetime.date.today().isoformat()
os.makedirs(out, exist_ok=True)
path = f"{out}/optimize-{label}-{date}.json"
json.dump({"device": rules.get("device"), "date": date, "command": "bench/optimize/run.sh",
           "rules": rules, "tuning": tuning, "rechecks": rechecks,
           "copy_bandwidth": ceil, "rules_wall_seconds": mid - start,
           "tuning_wall_seconds": end - mid,
           "targets": [{"name": n, "value": v, "target": w, "pass": ok} for n, v, w, ok in targets]},
          open(path, "w"), indent=1)
print(f"wrote {path}")
PY
