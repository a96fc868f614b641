#!/usr/bin/env bash
# Capture and replay on real code bases, beside the project (their sources
# are fetched, never committed): karpathy's llm.c (dev/cuda, the kernel
# development programs, built as their comments say: -O3 --use_fast_math)
# and NVIDIA's cuda-samples. Each program is built with nvcc, with a
# compile_commands.json written beside it (so the judge compiles the
# kernels with the same code generation), run under
# `kernelsmith-cc profile --capture` for the named kernels, and every
# captured launch is replayed alone with `kernelsmith-cc replay`. With
# KS_OPTIMIZE_SECONDS=S, `optimize --capture` then searches each captured
# kernel for S seconds (no spec: the capture is its only input).
#
#   bench/capture/real.sh LLM_C_DIR CUDA_SAMPLES_DIR
#
# KS_BIN (default build/cli/kernelsmith-cc), KS_RESULTS (default
# bench/results), KS_PROGRAMS (names to run; default all), KS_KEEP_LOGS (a directory for each search's log and the
# patch `apply` would make), NVCC. Prints a table and writes
# bench/results/capture-real-<gpu>-<date>.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
llmc=$(realpath "${1:?usage: bench/capture/real.sh LLM_C_DIR CUDA_SAMPLES_DIR}")
samples=$(realpath "${2:?usage: bench/capture/real.sh LLM_C_DIR CUDA_SAMPLES_DIR}")
bin=$(realpath "${KS_BIN:-build/cli/kernelsmith-cc}")
out=${KS_RESULTS:-bench/results}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
secs=${KS_OPTIMIZE_SECONDS:-0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$(dirname "$nvcc")/../lib64

# name | source dir | sources (space-separated, first is the kernels') |
# extra nvcc flags | arguments | kernels to capture | profile options
# (softmax_forward's rows are 50257 floats wide, 3.1 GiB in and out: over
# the default --capture-limit)
programs=(
  "gelu_forward|$llmc/dev/cuda|gelu_forward.cu|--use_fast_math -lcublas -lcublasLt|1|gelu_forward_kernel1"
  "softmax_forward|$llmc/dev/cuda|softmax_forward.cu|--use_fast_math -lcublas -lcublasLt|1|softmax_forward_kernel1|--capture-limit 4294967296"
  "layernorm_forward|$llmc/dev/cuda|layernorm_forward.cu|--use_fast_math -lcublas -lcublasLt|3|layernorm_forward_kernel3"
  "matrixMul|$samples/Samples/0_Introduction/matrixMul|matrixMul.cu|-I$samples/Common||MatrixMulCUDA"
  "transpose|$samples/Samples/6_Performance/transpose|transpose.cu|-I$samples/Common||transposeNaive,transposeCoalesced"
  "alignedTypes|$samples/Samples/6_Performance/alignedTypes|alignedTypes.cu|-I$samples/Common||testKernel"
  "scalarProd|$samples/Samples/2_Concepts_and_Techniques/scalarProd|scalarProd.cu scalarProd_cpu.cpp|-I$samples/Common||scalarProdGPU"
)

dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
label=$(echo "${dev:-gpu}" | sed 's/NVIDIA //; s/ /-/g' | tr 'A-Z' 'a-z')
mkdir -p "$out"
rows=""
write_json() {
  echo "{\"device\": \"$dev\", \"date\": \"$(date +%F)\", \"command\": \"bench/capture/real.sh\", \"programs\": [${rows%,}]}" \
    | python3 -m json.tool >"$out/capture-real-$label-$(date +%F).json"
}

printf '%-18s %-36s %8s %s\n' program kernels "MiB" replay
for p in "${programs[@]}"; do
  IFS='|' read -r name src files flags args kernels popts <<<"$p"
  [ -z "${KS_PROGRAMS:-}" ] || [[ " $KS_PROGRAMS " == *" $name "* ]] || continue
  d=$tmp/$name
  mkdir -p "$d"
  srcs=()
  for f in $files; do cp "$src/$f" "$d/"; srcs+=("$f"); done
  cp "$src"/*.h "$src"/*.cuh "$d/" 2>/dev/null
  # The build's own command, as compile_commands.json holds it.
  cmd="$nvcc -O3 -arch=sm_90 $flags -o $name ${srcs[*]}"
  python3 - "$d" "$cmd" "${srcs[0]}" <<'PY'
import json, sys
d, cmd, f = sys.argv[1:4]
json.dump([{"directory": d, "command": cmd, "file": f}], open(d + "/compile_commands.json", "w"))
PY
  (cd "$d" && $cmd) >"$d/build.log" 2>&1 || { echo "$name: does not build"; tail -3 "$d/build.log"; continue; }
  (cd "$d" && "$bin" -q profile -o "$d/prof.json" --capture "$kernels" $popts -- ./"$name" $args) \
    >"$d/run.out" 2>"$d/prof.err"
  prc=$?
  "$bin" -q replay "$d/capture.kscap" "$d" >"$d/replay.out" 2>"$d/replay.err"
  rrc=$?
  orc=-1
  if [ "$secs" != 0 ]; then
    (cd "$d" && "$bin" optimize --capture "$d/capture.kscap" --max-seconds "$secs" --json "$d" \
      >"$d/opt.json" 2>"$d/opt.err")
    orc=$?
    # the patch apply would make (a diff; nothing is written)
    (cd "$d" && "$bin" apply "$d" >"$d/patch.diff" 2>"$d/apply.err")
    if [ -n "${KS_KEEP_LOGS:-}" ]; then
      mkdir -p "$KS_KEEP_LOGS" && cp "$d/opt.err" "$KS_KEEP_LOGS/$name.optimize.log" &&
        cp "$d/patch.diff" "$KS_KEEP_LOGS/$name.patch" && cp "$d/apply.err" "$KS_KEEP_LOGS/$name.apply.err"
    fi
  fi
  line=$(python3 - "$name" "$kernels" "$d" "$prc" "$rrc" "$orc" <<'PY'
import json, os, re, sys
name, kernels, d, prc, rrc, orc = sys.argv[1:7]
text = open(os.path.join(d, "replay.out")).read()
err = open(os.path.join(d, "replay.err")).read().strip().splitlines()
launches = re.findall(r"^(\S+) (capture\d+): .*: (.*)$", text, re.M)
outputs = re.findall(r"^    (\S+)\s+(bit for bit|within tolerance|DIFFERS)", text, re.M)
cap = os.path.join(d, "capture.kscap")
row = {"program": name, "kernels": kernels, "profile_rc": int(prc), "replay_rc": int(rrc),
       "capture_mib": os.path.getsize(cap) / 2**20 if os.path.exists(cap) else 0,
       "launches": [{"kernel": k, "size": s, "verdict": v} for k, s, v in launches],
       "outputs_bit_for_bit": sum(1 for _, v in outputs if v == "bit for bit"),
       "outputs_within_tolerance": sum(1 for _, v in outputs if v == "within tolerance"),
       "outputs_differ": sum(1 for _, v in outputs if v == "DIFFERS"),
       "replay_errors": [l for l in err if "warning" in l or "error" in l][-6:],
       "profile_messages": open(os.path.join(d, "prof.err")).read().strip().splitlines()[-6:],
       "program_output": open(os.path.join(d, "run.out")).read().strip().splitlines()[-3:]}
if int(orc) >= 0:
    try:
        o = json.load(open(os.path.join(d, "opt.json")))
        row["optimize"] = [{"kernel": k["kernel"], "status": k.get("status"),
                            "speedup": k.get("speedup"), "verdict": k.get("verdict"),
                            "note": k.get("note")} for k in o.get("kernels", [])]
    except Exception as e:
        row["optimize"] = "no JSON (%s)" % e.__class__.__name__
    best = re.findall(r"best ([0-9.]+x [^,]*),", open(os.path.join(d, "opt.err")).read())
    row["optimize_best"] = best[-1] if best else None
    patch = open(os.path.join(d, "patch.diff")).read()
    row["patch_sites_dispatched"] = patch.count("if (!ks_site.take(")
    row["apply_notes"] = open(os.path.join(d, "apply.err")).read().strip().splitlines()[-4:]
print(json.dumps(row))
PY
)
  rows="$rows$line,"
  write_json
  python3 -c "
import json,sys; r=json.loads(sys.argv[1])
v=sorted({l['verdict'] for l in r['launches']}) or ['none']
print(f\"{r['program']:<18} {r['kernels'][:36]:<36} {r['capture_mib']:8.1f} {', '.join(v)} ({len(r['launches'])} launches; outputs {r['outputs_bit_for_bit']} bit for bit, {r['outputs_within_tolerance']} within tolerance, {r['outputs_differ']} differ)\")
for e in r['replay_errors']: print('    ' + e)
if not r['launches']:
    for e in r['profile_messages'] + r['program_output']: print('    | ' + e)
if 'optimize' in r: print('    optimize:', r['optimize'], r.get('optimize_best'), 'sites dispatched:', r.get('patch_sites_dispatched'))
for e in r.get('apply_notes', []): print('    apply: ' + e)" "$line"
  rm -f "$d/capture.kscap"
done
write_json
echo "wrote $out/capture-real-$label-$(date +%F).json"
