#!/usr/bin/env bash
# Capture's evidence on a GPU machine, in two parts.
#
# 1. Replay: every test app run under `kernelsmith-cc profile --capture` for
#    its timed kernel, then `kernelsmith-cc replay`: the original kernel,
#    alone, on the captured inputs with the captured launch, must reproduce
#    the application's outputs bit for bit (or, for float atomics, within
#    tolerance, and the table says which).
# 2. From a capture alone: test apps with their spec annotations removed
#    (so `optimize` cannot use a spec), profiled with --capture, optimized
#    with `optimize --profile` (which takes capture.kscap beside the
#    profile), patched with `apply --write`, rebuilt with their own
#    Makefiles and run: their own CPU check must pass, and the app's own
#    timing shows the speedup.
#
# Prints both tables and writes bench/results/capture-<gpu>-<date>.json.
#
#   bench/capture/run.sh     KS_BIN (default build/cli/kernelsmith-cc),
#                            KS_REPLAY_APPS, KS_OPT_APPS (app lists),
#                            KS_OPT_SECONDS (optimize budget per app, 100),
#                            KS_RESULTS (default bench/results), NVCC
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${KS_BIN:-build/cli/kernelsmith-cc}")
out=${KS_RESULTS:-bench/results}
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
secs=${KS_OPT_SECONDS:-100}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
replay_apps=(${KS_REPLAY_APPS-saxpy gelu reduce_sum softmax layernorm transpose sgemm stencil2d histogram prefix_sum spmv_csr gemv})
opt_apps=(${KS_OPT_APPS-softmax stencil2d gelu})

dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
label=$(echo "${dev:-gpu}" | sed 's/NVIDIA //; s/ /-/g' | tr 'A-Z' 'a-z')
mkdir -p "$out"
replay_rows=""
opt_rows=""
# Written after every app, so that a run cut short keeps what it measured.
write_json() {
  echo "{\"device\": \"$dev\", \"date\": \"$(date +%F)\", \"command\": \"bench/capture/run.sh\", \"replay\": [${replay_rows%,}], \"from_capture\": [${opt_rows%,}]}" \
    | python3 -m json.tool >"$out/capture-$label-$(date +%F).json"
}

cp -r testdata/apps "$tmp/apps"
rm -rf "$tmp/apps/expected"
make -s -C "$tmp/apps" NVCC="$nvcc" -j"$(nproc)" >"$tmp/build.log" 2>&1 || { tail "$tmp/build.log"; exit 1; }

kernels_of() { # app -> the kernels its own timing line names, comma-separated
  (cd "$tmp/apps/$1" && ./"$1" 2>/dev/null) | sed -n "s/^$1: kernel \([^ ]*\) .*/\1/p" | head -1 | tr '+' ','
}

# ---- 1. replay ----------------------------------------------------------
printf '%-11s %-26s %9s %-30s\n' app kernel "MiB" replay
for app in "${replay_apps[@]}"; do
  d=$tmp/apps/$app
  ks=$(kernels_of "$app")
  (cd "$d" && "$bin" -q profile -o "$d/prof.json" --capture "$ks" -- ./"$app") >"$d/prof.out" 2>"$d/prof.err"
  prc=$?
  "$bin" -q replay "$d/capture.kscap" "$d" >"$d/replay.out" 2>"$d/replay.err"
  rrc=$?
  line=$(python3 - "$app" "$ks" "$d/replay.out" "$d/capture.kscap" "$prc" "$rrc" <<'PY'
import json, os, re, sys
app, ks, rep, cap, prc, rrc = sys.argv[1:7]
text = open(rep).read() if os.path.exists(rep) else ""
launches = re.findall(r"^(\S+) (capture\d+): .*: (.*)$", text, re.M)
outputs = re.findall(r"^    (\S+)\s+(bit for bit|within tolerance|DIFFERS)", text, re.M)
verdicts = sorted({v for _, _, v in launches})
print(json.dumps({"app": app, "kernels": ks, "profile_rc": int(prc), "replay_rc": int(rrc),
                  "capture_mib": os.path.getsize(cap) / 2**20 if os.path.exists(cap) else 0,
                  "launches": len(launches), "outputs": len(outputs),
                  "bit_for_bit": sum(1 for _, v in outputs if v == "bit for bit"),
                  "within_tolerance": sum(1 for _, v in outputs if v == "within tolerance"),
                  "differs": sum(1 for _, v in outputs if v == "DIFFERS"),
                  "verdict": ", ".join(verdicts) or "none"}))
PY
)
  replay_rows="$replay_rows$line,"
  write_json
  python3 -c "
import json,sys; r=json.loads(sys.argv[1])
print(f\"{r['app']:<11} {r['kernels'][:26]:<26} {r['capture_mib']:9.1f} {r['verdict']} ({r['bit_for_bit']} bit for bit, {r['within_tolerance']} within tolerance, {r['differs']} differ of {r['outputs']} outputs)\")" "$line"
  [ $rrc -eq 0 ] || { cat "$d/replay.err"; tail -5 "$d/prof.err"; }
  rm -f "$d/capture.kscap" # they add up to gigabytes
done

# ---- 2. optimize from a capture alone -----------------------------------
echo
printf '%-11s %-22s %-8s %8s %8s %9s %9s %8s %s\n' app kernel spec search verdict "orig ms" "patched" speedup check
for app in "${opt_apps[@]}"; do
  repo=$tmp/opt-$app
  mkdir -p "$repo"
  cp -r testdata/apps/common testdata/apps/$app "$repo/"
  # The annotations go: a block comment starting "kernelsmith:", and runs of
  # "// kernelsmith:" comments.
  python3 - "$repo/$app" <<'PY'
import pathlib, re, sys
for f in pathlib.Path(sys.argv[1]).glob("*.cu*"):
    s = f.read_text()
    s = re.sub(r"/\*\s*kernelsmith:.*?\*/\n?", "", s, flags=re.S)
    s = re.sub(r"(?m)^[ \t]*// kernelsmith:.*\n(?:[ \t]*//.*\n)*", "", s)
    f.write_text(s)
PY
  (cd "$repo" && git init -q . && git add -A . && git -c user.email=b@b -c user.name=b commit -qm app)
  make -s -C "$repo/$app" NVCC="$nvcc" >"$repo/build0.log" 2>&1 || { tail "$repo/build0.log"; continue; }
  ks=$(cd "$repo/$app" && ./"$app" 2>/dev/null | sed -n "s/^$app: kernel \([^ ]*\) .*/\1/p" | head -1)
  before=$(cd "$repo/$app" && ./"$app" 2>&1)
  "$bin" -q spec "$ks" "$repo" >/dev/null 2>"$repo/spec.err"
  spec_rc=$?
  (cd "$repo/$app" && "$bin" -q profile -o "$repo/prof.json" --capture "$ks" -- ./"$app") \
    >"$repo/prof.out" 2>"$repo/prof.err"
  (cd "$repo" && "$bin" optimize --profile "$repo/prof.json" --top 1 --max-seconds "$secs" \
     --json "$repo/$app" >"$repo/opt.json" 2>"$repo/opt.err")
  orc=$?
  (cd "$repo" && "$bin" apply --write "$repo/$app" >"$repo/apply.out" 2>"$repo/apply.err")
  arc=$?
  make -s -C "$repo/$app" clean >/dev/null 2>&1
  make -s -C "$repo/$app" NVCC="$nvcc" >"$repo/build1.log" 2>&1
  brc=$?
  after=$(cd "$repo/$app" && ./"$app" 2>&1)
  line=$(python3 - "$app" "$ks" "$spec_rc" "$orc" "$arc" "$brc" "$repo" "$before" "$after" <<'PY'
import json, os, re, sys
app, ks, spec_rc, orc, arc, brc, repo, before, after = sys.argv[1:10]
def ms(text):
    m = re.search(r"^%s: kernel \S+ ([0-9.]+) ms" % re.escape(app), text, re.M)
    return float(m.group(1)) if m else 0.0
def passed(text):
    return bool(re.search(r"^%s: PASS" % re.escape(app), text, re.M))
search, verdict = 0.0, "?"
try:
    o = json.load(open(os.path.join(repo, "opt.json")))
    k = next((k for k in o.get("kernels", []) if k.get("speedup")), None) or (o.get("kernels") or [{}])[0]
    search = k.get("speedup") or 0.0
    verdict = k.get("verdict") or k.get("status") or "?"
except Exception as e:
    verdict = "no json (%s)" % e.__class__.__name__
patch = os.path.join(repo, ".kernelsmith", "applied")
replayed = open(os.path.join(repo, "opt.err")).read()
rep = re.findall(r"replayed (bit for bit|within tolerance)", replayed)
b, a = ms(before), ms(after)
print(json.dumps({"app": app, "kernel": ks, "spec_found": int(spec_rc) == 0,
                  "optimize_rc": int(orc), "apply_rc": int(arc), "build_rc": int(brc),
                  "search_speedup": search, "verdict": verdict, "replayed": rep,
                  "orig_ms": b, "patched_ms": a, "app_speedup": b / a if a else 0.0,
                  "check_before": passed(before), "check_after": passed(after),
                  "patched": "kernelsmith_dispatch" in open(os.path.join(repo, app, next(p for p in os.listdir(os.path.join(repo, app)) if p.endswith(".cu")))).read()}))
PY
)
  opt_rows="$opt_rows$line,"
  write_json
  python3 -c "
import json,sys; r=json.loads(sys.argv[1])
print(f\"{r['app']:<11} {r['kernel'][:22]:<22} {'yes' if r['spec_found'] else 'none':<8} {r['search_speedup']:7.2f}x {str(r['verdict'])[:8]:>8} {r['orig_ms']:9.4f} {r['patched_ms']:9.4f} {r['app_speedup']:7.2f}x {'PASS' if r['check_after'] else 'FAIL'} (patched {r['patched']}, replayed {r['replayed']})\")" "$line"
  if [ $orc -ne 0 ] || [ $arc -ne 0 ] || [ $brc -ne 0 ]; then
    tail -5 "$repo/opt.err" "$repo/apply.err" "$repo/build1.log"
  fi
  # the whole log of one app, for the record
  cp "$repo/opt.err" "$tmp/$app.optimize.log" 2>/dev/null
  (cd "$repo" && git diff) >"$tmp/$app.patch"
  rm -rf "$repo"/*.kscap "$repo/.kernelsmith/cache"
done

write_json
echo "wrote $out/capture-$label-$(date +%F).json"
if [ -n "${KS_KEEP_LOGS:-}" ]; then
  mkdir -p "$KS_KEEP_LOGS" && cp "$tmp"/*.optimize.log "$tmp"/*.patch "$KS_KEEP_LOGS"/ 2>/dev/null
fi
