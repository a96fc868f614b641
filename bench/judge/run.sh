#!/usr/bin/env bash
# The judge's targets, on a GPU machine (issue: "the judge"):
#  1. one kernel timed in 5 separate runs: medians within 1% of each other;
#  2. a full evaluation (compile, verify, time) of a small elementwise kernel
#     under 1 s of wall time;
#  3. NVRTC compile throughput of at least 40 variants per second.
# Prints a table and writes bench/results/judge-<label>-<date>.json.
#   KS_BIN (default build/cli/kernelsmith-cc), KS_COMPILE_BENCH
#   (default build/bench/compile/compile_bench), KS_LABEL (default: gpu name).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${KS_BIN:-build/cli/kernelsmith-cc}
cbench=${KS_COMPILE_BENCH:-build/bench/compile/compile_bench}
out=${KS_RESULTS:-bench/results}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cache="$tmp/cache"

# 1. stability: five separate processes
for i in 1 2 3 4 5; do
  "$bin" -q bench gelu_forward_kernel --json --cache-dir "$cache" testdata/apps/gelu >"$tmp/bench$i.json"
done
# 2. a full evaluation; the first run fills the compile cache, the second
#    is what a search sees for a new variant of a known kernel, so both count
"$bin" -q check axpy --variant bench/judge/small/axpy_vec2.cu --json --cache-dir "$cache" \
  bench/judge/small/axpy.cu >"$tmp/check1.json" || true
start=$(date +%s.%N)
"$bin" -q check axpy --variant bench/judge/small/axpy_vec2.cu --json --cache-dir "$tmp/cache2" \
  bench/judge/small/axpy.cu >"$tmp/check2.json" || true
end=$(date +%s.%N)
echo "$start $end" >"$tmp/command_time"
# 3. compile throughput on every core
"$cbench" 160 >"$tmp/compile.json"

python3 - "$tmp" "$out" "${KS_LABEL:-}" <<'PY'
import datetime, json, os, statistics, sys
tmp, out, label = sys.argv[1], sys.argv[2], sys.argv[3]
benches = [json.load(open(f"{tmp}/bench{i}.json")) for i in range(1, 6)]
medians = [b["timing"]["original_median_ms"] for b in benches]
spread = (max(medians) - min(medians)) / statistics.median(medians)
check1, check2 = (json.load(open(f"{tmp}/check{i}.json")) for i in (1, 2))
start, end = map(float, open(f"{tmp}/command_time").read().split())
compile_ = json.load(open(f"{tmp}/compile.json"))
device = benches[0]["device"]
rows = [
    ("bench gelu 5 runs: median spread", f"{100*spread:.2f}%", "<= 1%", spread <= 0.01),
    ("check axpy (n=2^20): evaluation wall", f"{check2['wall_seconds']:.3f} s", "< 1 s",
     check2["wall_seconds"] < 1.0),
    ("  same, whole command (scan..worker start)", f"{end-start:.3f} s", "-", True),
    ("  verdict", f"{check2['verdict']} {check2['reason'][:40]}", "-", True),
    ("NVRTC compile throughput", f"{compile_['variants_per_second']:.1f}/s on {compile_['threads']} threads",
     ">= 40/s", compile_["variants_per_second"] >= 40),
]
print(f"device: {device['name']}, driver {device['driver']}")
for name, value, target, ok in rows:
    print(f"{name:44} {value:34} {target:8} {'PASS' if ok else 'FAIL'}")
label = label or device["name"].replace("NVIDIA ", "").replace(" ", "-").lower()
path = f"{out}/judge-{label}-{datetime.date.today().isoformat()}.json"
os.makedirs(out, exist_ok=True)
json.dump({"benchmark": "judge targets", "date": datetime.date.today().isoformat(),
           "device": device, "bench_medians_ms": medians, "median_spread": spread,
           "check_small": {"verdict": check2["verdict"], "reason": check2["reason"],
                           "evaluation_seconds": check2["wall_seconds"],
                           "command_seconds": end - start,
                           "first_run_evaluation_seconds": check1["wall_seconds"]},
           "compile": compile_,
           "pass": all(r[3] for r in rows)}, open(path, "w"), indent=2)
print(f"wrote {path}")
sys.exit(0 if all(r[3] for r in rows) else 1)
PY
