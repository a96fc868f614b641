#!/usr/bin/env bash
# profile's evidence on a GPU machine: every test app built from its own
# Makefile, run plainly and under `kernelsmith-cc profile`; per app, the
# profile's mean GPU time of the app's timed kernel against the app's own
# event timing (median of its timed launches), and the wall time with the
# injection library against without (median of three runs each). Prints a
# table and writes bench/results/profile-<gpu>-<date>.json.
#
#   bench/profile/run.sh        KS_BIN (default build/cli/kernelsmith-cc),
#                               KS_INJECT_LIB (default: beside KS_BIN's build
#                               or install), KS_RESULTS (default bench/results), NVCC
#
# The overhead compares the app's wall time with the injection library
# loaded (what `profile` runs) against without; the profile's own scan of
# the sources, done once after the app, is not part of it.
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${KS_BIN:-build/cli/kernelsmith-cc}")
lib=${KS_INJECT_LIB:-$(dirname "$bin")/../runtime/inject/libkernelsmith_inject.so}
[ -f "$lib" ] || lib=$(dirname "$bin")/../lib/kernelsmith/libkernelsmith_inject.so
[ -f "$lib" ] || { echo "no injection library (set KS_INJECT_LIB)"; exit 1; }
lib=$(realpath "$lib")
out=${KS_RESULTS:-bench/results}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# KS_PROFILE_APPS="" skips the per-app part (the pipeline and long run still go).
apps=(${KS_PROFILE_APPS-saxpy gelu reduce_sum softmax layernorm transpose sgemm stencil2d histogram prefix_sum spmv_csr gemv})
cp -r testdata/apps "$tmp/apps"
make -s -C "$tmp/apps" NVCC="$nvcc" -j"$(nproc)" >"$tmp/build.log" 2>&1 || { tail "$tmp/build.log"; exit 1; }

wall() { # dir app [inject] -> seconds
  local t0 t1
  t0=$(date +%s.%N)
  if [ -n "${3:-}" ]; then
    rm -f "$tmp/$2.jsonl"
    (cd "$1/$2" && CUDA_INJECTION64_PATH=$lib KERNELSMITH_PROFILE_OUT=$tmp/$2.jsonl ./"$2") \
      >"$tmp/$2.i.out" 2>&1
  else
    (cd "$1/$2" && ./"$2") >"$tmp/$2.out" 2>&1
  fi
  t1=$(date +%s.%N)
  python3 -c "print($t1 - $t0)"
}
median3() { printf '%s\n' "$@" | sort -n | sed -n 2p; }

rows=""
printf '%-11s %-28s %10s %10s %7s %9s %9s %8s\n' app kernel "app ms" "profile ms" diff "plain s" "profile s" overhead
for app in "${apps[@]}"; do
  p1=$(wall "$tmp/apps" "$app"); p2=$(wall "$tmp/apps" "$app"); p3=$(wall "$tmp/apps" "$app")
  q1=$(wall "$tmp/apps" "$app" inject); q2=$(wall "$tmp/apps" "$app" inject)
  q3=$(wall "$tmp/apps" "$app" inject)
  (cd "$tmp/apps/$app" && KERNELSMITH_INJECT_LIB=$lib "$bin" -q profile -o "$tmp/$app.json" -- ./"$app") \
    >"$tmp/$app.p.out" 2>"$tmp/$app.p.err"
  plain=$(median3 "$p1" "$p2" "$p3"); prof=$(median3 "$q1" "$q2" "$q3")
  line=$(python3 - "$tmp/$app.out" "$tmp/$app.json" "$app" "$plain" "$prof" <<'PY'
import json, re, sys
out, prof, app, plain, profs = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
m = re.search(r"^%s: kernel (\S+) ([0-9.]+) ms" % re.escape(app), open(out).read(), re.M)
kernel, app_ms = (m.group(1), float(m.group(2))) if m else ("?", 0.0)
p = json.load(open(prof))
ks = p.get("kernels", [])
names = kernel.split("+")
# the app's own timing of several kernels (prefix_sum) is their sum per run
mean = 0.0
for n in names:
    k = next((k for k in ks if n in (k.get("demangled") or k.get("mangled", ""))), None)
    mean += k["mean_ms"] if k else 0.0
diff = (mean - app_ms) / app_ms * 100 if app_ms else 0.0
over = (profs - plain) / plain * 100 if plain else 0.0
print(json.dumps({"app": app, "kernel": kernel, "app_ms": app_ms, "profile_mean_ms": mean,
                  "diff_percent": diff, "plain_s": plain, "profile_s": profs,
                  "overhead_percent": over, "ended_normally": p.get("ended_normally"),
                  "hot": [(k.get("demangled"), k.get("share")) for k in ks[:3]]}))
PY
)
  rows="$rows$line,"
  python3 -c "
import json,sys; r=json.loads(sys.argv[1])
print(f\"{r['app']:<11} {r['kernel'][:28]:<28} {r['app_ms']:10.4f} {r['profile_mean_ms']:10.4f} {r['diff_percent']:6.1f}% {r['plain_s']:9.2f} {r['profile_s']:9.2f} {r['overhead_percent']:7.1f}%\")" "$line"
done

# One application with several kernels (bench/profile/pipeline.cu): each
# kernel's mean in the profile against the app's own event timing.
cp bench/profile/pipeline.cu "$tmp/" # the profile maps names to the sources in its directory
"$nvcc" -O3 -arch=sm_90 -o "$tmp/pipeline" "$tmp/pipeline.cu" || exit 1
(cd "$tmp" && "$bin" -q profile -o "$tmp/pipeline.json" -- ./pipeline 200 26) \
  >"$tmp/pipeline.out" 2>"$tmp/pipeline.err"
# and plainly: the app's own times without the library loaded
(cd "$tmp" && ./pipeline 200 26) >"$tmp/pipeline-plain.out" 2>&1
multi=$(python3 - "$tmp/pipeline.out" "$tmp/pipeline.json" "$tmp/pipeline-plain.out" <<'PY'
import json, re, sys
out, prof = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
plain = dict(re.findall(r"^pipeline: kernel (\S+) mean ([0-9.]+) ms", open(sys.argv[3]).read(), re.M))
rows = []
for m in re.finditer(r"^pipeline: kernel (\S+) mean ([0-9.]+) ms", out, re.M):
    name, app_ms = m.group(1), float(m.group(2))
    k = next((k for k in prof["kernels"] if k.get("demangled", "").startswith(name + "(")), None)
    pm = k["mean_ms"] if k else 0.0
    p0 = float(plain.get(name, 0))
    rows.append({"kernel": name, "app_ms": app_ms, "profile_mean_ms": pm, "app_plain_ms": p0,
                 "diff_plain_percent": (pm - p0) / p0 * 100 if p0 else 0.0,
                 "share": k["share"] if k else 0.0, "launches": k["launches"] if k else 0,
                 "mapped": bool(k and k.get("source")),
                 "diff_percent": (pm - app_ms) / app_ms * 100 if app_ms else 0.0})
print(json.dumps(rows))
PY
)
echo
echo "pipeline (4 kernels, 200 iterations, 2^26 elements):"
python3 -c "
import json,sys
for r in json.loads(sys.argv[1]):
    print(f\"  {r['kernel']:<16} app {r['app_ms']:8.4f} ms  profile {r['profile_mean_ms']:8.4f} ms  {r['diff_percent']:6.1f}%  (app run plainly {r['app_plain_ms']:8.4f} ms: {r['diff_plain_percent']:6.1f}%)  share {100*r['share']:5.1f}%  launches {r['launches']}  mapped {r['mapped']}\")" "$multi"

# The same under --sample: launches counted, times estimated from the
# sampled ones.
(cd "$tmp" && "$bin" -q profile --sample "${KS_SAMPLE:-20}" --sample-after 0 -o "$tmp/pipeline-sampled.json" -- \
  ./pipeline 200 26) >"$tmp/pipeline-s.out" 2>"$tmp/pipeline-s.err"
sampled=$(python3 - "$tmp/pipeline-s.out" "$tmp/pipeline-sampled.json" <<'PY'
import json, re, sys
out, prof = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
rows = []
for m in re.finditer(r"^pipeline: kernel (\S+) mean ([0-9.]+) ms", out, re.M):
    name, app_ms = m.group(1), float(m.group(2))
    k = next((k for k in prof["kernels"] if k.get("demangled", "").startswith(name + "(")), None)
    pm = k["mean_ms"] if k else 0.0
    rows.append({"kernel": name, "app_ms": app_ms, "profile_mean_ms": pm,
                 "launches": k["launches"] if k else 0,
                 "sampled_launches": k.get("sampled_launches", 0) if k else 0,
                 "share": k["share"] if k else 0.0,
                 "diff_percent": (pm - app_ms) / app_ms * 100 if app_ms else 0.0})
print(json.dumps({"sample_percent": prof.get("sample_percent", 0), "kernels": rows}))
PY
)
echo "pipeline under --sample ${KS_SAMPLE:-20}:"
python3 -c "
import json,sys
for r in json.loads(sys.argv[1])['kernels']:
    print(f\"  {r['kernel']:<16} app {r['app_ms']:8.4f} ms  profile {r['profile_mean_ms']:8.4f} ms  {r['diff_percent']:6.1f}%  share {100*r['share']:5.1f}%  launches {r['launches']} ({r['sampled_launches']} timed)\")" "$sampled"

# Overhead on a long run, split into the fixed cost of loading CUPTI and
# the cost per launch: the pipeline run with 1 iteration (start-up alone)
# and with many (about 6 s), each plain and under the injection library,
# medians of three; the long one also with the library's launch callbacks
# off (KERNELSMITH_INJECT_CALLBACKS=0), CUPTI's kernel records alone.
runp() { # iterations [inject] -> seconds
  local t0 t1
  t0=$(date +%s.%N)
  if [ -n "${2:-}" ]; then
    (cd "$tmp" && CUDA_INJECTION64_PATH=$lib KERNELSMITH_PROFILE_OUT=$tmp/long.jsonl \
      KERNELSMITH_INJECT_CALLBACKS=$([ "$2" = nocb ] && echo 0 || echo 1) \
      KERNELSMITH_PROFILE_SAMPLE=$(case $2 in sample|default) echo "$sample";; *) echo 0;; esac) \
      KERNELSMITH_PROFILE_SAMPLE_AFTER_MS=$([ "$2" = default ] && echo 2000 || echo 0) \
      ./pipeline "$1" 24) >/dev/null 2>&1
  else
    (cd "$tmp" && ./pipeline "$1" 24) >/dev/null 2>&1
  fi
  t1=$(date +%s.%N)
  python3 -c "print($t1 - $t0)"
}
long_iters=${KS_LONG_ITERATIONS:-40000}
sample=${KS_SAMPLE:-20}
s0=(); s1=(); l0=(); l1=(); l2=(); l3=(); l4=()
for r in 1 2 3; do
  s0+=("$(runp 1)"); s1+=("$(runp 1 inject)")
  l0+=("$(runp "$long_iters")"); l1+=("$(runp "$long_iters" inject)")
  l2+=("$(runp "$long_iters" nocb)"); l3+=("$(runp "$long_iters" sample)")
  l4+=("$(runp "$long_iters" default)")
done
overhead=$(python3 - "$long_iters" "${s0[*]}" "${s1[*]}" "${l0[*]}" "${l1[*]}" "${l2[*]}" "${l3[*]}" "$sample" "${l4[*]}" <<'PY'
import json, statistics as st, sys
it = int(sys.argv[1])
s0, s1, l0, l1, l2, l3 = (st.median(map(float, a.split())) for a in sys.argv[2:8])
sample = int(sys.argv[8])
l4 = st.median(map(float, sys.argv[9].split()))
launches = 4 * it
startup = s1 - s0
per_launch_us = ((l1 - l0) - startup) / launches * 1e6
print(json.dumps({"iterations": it, "launches": launches, "plain_short_s": s0,
                  "profile_short_s": s1, "startup_s": startup, "plain_long_s": l0,
                  "profile_long_s": l1, "overhead_percent": (l1 - l0) / l0 * 100,
                  "per_launch_us": per_launch_us,
                  "per_launch_percent_of_run": ((l1 - l0) - startup) / l0 * 100,
                  "profile_no_callbacks_long_s": l2,
                  "overhead_no_callbacks_percent": (l2 - l0) / l0 * 100,
                  "sample_percent": sample, "profile_sampled_long_s": l3,
                  "overhead_sampled_percent": (l3 - l0) / l0 * 100,
                  "profile_default_long_s": l4,
                  "overhead_default_percent": (l4 - l0) / l0 * 100}))
PY
)
python3 -c "
import json,sys; o=json.loads(sys.argv[1])
print(f\"long run: {o['launches']} launches, plain {o['plain_long_s']:.2f} s, profiled {o['profile_long_s']:.2f} s: overhead {o['overhead_percent']:.2f}%\")
print(f\"  start-up (1 iteration): {o['startup_s']:.3f} s; per launch: {o['per_launch_us']:.2f} us ({o['per_launch_percent_of_run']:.2f}% of the run)\")
print(f\"  kernel records alone (no launch callbacks): {o['profile_no_callbacks_long_s']:.2f} s: overhead {o['overhead_no_callbacks_percent']:.2f}%\")
print(f\"  sampled ({o['sample_percent']}% of the time timed): {o['profile_sampled_long_s']:.2f} s: overhead {o['overhead_sampled_percent']:.2f}%\")
print(f\"  profile's default (every launch for 2 s, then {o['sample_percent']}%): {o['profile_default_long_s']:.2f} s: overhead {o['overhead_default_percent']:.2f}%\")" "$overhead"

dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
label=$(echo "${dev:-gpu}" | sed 's/NVIDIA //; s/ /-/g' | tr 'A-Z' 'a-z')
mkdir -p "$out"
echo "{\"device\": \"$dev\", \"date\": \"$(date +%F)\", \"command\": \"bench/profile/run.sh\", \"apps\": [${rows%,}], \"pipeline\": $multi, \"pipeline_sampled\": $sampled, \"long_run\": $overhead}" \
  | python3 -m json.tool >"$out/profile-$label-$(date +%F).json"
echo "wrote $out/profile-$label-$(date +%F).json"
