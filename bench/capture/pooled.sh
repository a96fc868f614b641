#!/usr/bin/env bash
# Capture windows on pooled memory (bench/capture/pooled.cu: tensors carved
# out of a 2 GiB and a 3 GiB allocation, as llm.c and caching allocators
# do). The program is captured three ways and every captured launch
# replayed alone:
#   no window        each launch's allocations are over --capture-limit,
#                    so nothing is snapshotted (recorded as over the limit)
#   window 64 MiB    only the span the pointers reach is copied; the
#                    replay must reproduce the outputs bit for bit
#   window 1 MiB     too small for encoder_forward's reads of wpe: the
#                    replay check must say NOT REPRODUCED, not pass
# With KS_OPTIMIZE_SECONDS=S (default 60), `optimize --capture` then
# searches residual_forward from the 64 MiB capture alone.
#
#   bench/capture/pooled.sh    KS_BIN, KS_RESULTS, NVCC
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${KS_BIN:-build/cli/kernelsmith-cc}")
out=${KS_RESULTS:-bench/results}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
secs=${KS_OPTIMIZE_SECONDS:-60}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
label=$(echo "${dev:-gpu}" | sed 's/NVIDIA //; s/ /-/g' | tr 'A-Z' 'a-z')
mkdir -p "$out"

cp bench/capture/pooled.cu "$tmp/"
cmd="$nvcc -O3 -arch=sm_90 -o pooled pooled.cu"
python3 -c 'import json,sys; json.dump([{"directory": sys.argv[1], "command": sys.argv[2], "file": "pooled.cu"}], open(sys.argv[1] + "/compile_commands.json", "w"))' "$tmp" "$cmd"
(cd "$tmp" && $cmd) || exit 1
(cd "$tmp" && ./pooled) || exit 1

rows=""
printf '%-12s %8s %-60s\n' window "MiB" "replay (per launch)"
for w in none 67108864 1048576; do
  d=$tmp/w-$w
  mkdir -p "$d"
  opt=(); [ "$w" = none ] || opt=(--capture-window "$w")
  (cd "$tmp" && "$bin" -q profile -o "$d/prof.json" --capture encoder_forward,residual_forward \
     "${opt[@]}" -- ./pooled) >"$d/run.out" 2>"$d/prof.err"
  prc=$?
  "$bin" -q replay "$d/capture.kscap" "$tmp" >"$d/replay.out" 2>"$d/replay.err"
  rrc=$?
  orc=-1
  if [ "$w" = 67108864 ] && [ "$secs" != 0 ]; then
    (cd "$tmp" && "$bin" optimize --capture "$d/capture.kscap" --max-seconds "$secs" --json \
       "$tmp" >"$d/opt.json" 2>"$d/opt.err")
    orc=$?
  fi
  line=$(python3 - "$w" "$d" "$prc" "$rrc" "$orc" <<'PY'
import json, os, re, sys
w, d, prc, rrc, orc = sys.argv[1:6]
rep = open(os.path.join(d, "replay.out")).read()
cap = os.path.join(d, "capture.kscap")
row = {"window": w, "profile_rc": int(prc), "replay_rc": int(rrc),
       "app_check": "PASS" in open(os.path.join(d, "run.out")).read(),
       "capture_mib": os.path.getsize(cap) / 2**20 if os.path.exists(cap) else 0,
       "capture_lines": [l for l in open(os.path.join(d, "prof.err")).read().splitlines()
                         if "launch" in l][:4],
       "launches": [{"kernel": k, "size": s, "verdict": v}
                    for k, s, v in re.findall(r"^(\S+) (capture\d+): .*: (.*)$", rep, re.M)],
       "replay_errors": open(os.path.join(d, "replay.err")).read().strip().splitlines()[-3:]}
if int(orc) >= 0:
    try:
        o = json.load(open(os.path.join(d, "opt.json")))
        row["optimize"] = [{"kernel": k["kernel"], "status": k.get("status"), "inputs": k.get("inputs"),
                            "speedup": k.get("speedup"), "verdict": k.get("verdict")}
                           for k in o.get("kernels", [])]
    except Exception as e:
        row["optimize"] = "no JSON (%s)" % e.__class__.__name__
print(json.dumps(row))
PY
)
  rows="$rows$line,"
  python3 -c "
import json,sys; r=json.loads(sys.argv[1])
v='; '.join(l['kernel'][:24]+': '+l['verdict'] for l in r['launches']) or 'nothing to replay'
print(f\"{r['window']:<12} {r['capture_mib']:8.1f} {v}\")
for l in r['capture_lines']: print('    ' + l)
for e in r['replay_errors']: print('    ' + e)
if 'optimize' in r: print('    optimize:', r['optimize'])" "$line"
  [ "$w" = 67108864 ] && [ "$orc" -ge 0 ] && tail -4 "$d/opt.err"
  rm -f "$d/capture.kscap"
done
echo "{\"device\": \"$dev\", \"date\": \"$(date +%F)\", \"command\": \"bench/capture/pooled.sh\", \"windows\": [${rows%,}]}" \
  | python3 -m json.tool >"$out/capture-pooled-$label-$(date +%F).json"
echo "wrote $out/capture-pooled-$label-$(date +%F).json"
