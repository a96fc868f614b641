#!/usr/bin/env bash
# The LLM proposer's whole loop on a GPU, without a model: a local server
# (tests/llm_replay_server.py) answers the planner, executor and summarizer
# with replies we wrote (testdata/llm/replies: real faster kernels for
# saxpy, gelu and softmax, and broken and cheating ones), the GPU judge
# verifies and times every child, and `apply` writes the winners as a patch.
# Prints a summary and writes bench/results/llm-<gpu>-<date>.{json,md}: the
# plans, the variants and their verdicts, the rejections with reasons, the
# memory entries, the winners and the patch.
#
#   bench/llm/run.sh           KS_BIN (default build/cli/kernelsmith-cc),
#                              KS_RESULTS (default bench/results), KS_ROUNDS (3)
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=$(realpath "${KS_BIN:-build/cli/kernelsmith-cc}")
out=${KS_RESULTS:-bench/results}
rounds=${KS_ROUNDS:-3}
tmp=$(mktemp -d)
trap 'kill $server 2>/dev/null; rm -rf "$tmp"' EXIT
repo=$tmp/apps
mkdir -p "$repo"
cp -r testdata/apps/. "$repo/"
rm -rf "$repo/expected"
(cd "$repo" && git init -q . && git add -A . && git -c user.email=b@b -c user.name=b commit -qm apps)

cat >"$tmp/script.json" <<'JSON'
{"saxpy_kernel": ["saxpy_vec4.txt", "bad_signature.txt", "saxpy_half_cheat.txt",
                  "bad_host_code.txt", "saxpy_edit.txt", "bad_json.txt", "saxpy_original_name.txt"],
 "gelu_forward_kernel": ["gelu_vec4.txt", "bad_launch.txt"],
 "softmax_rows_kernel": ["softmax_warp.txt", "bad_printf.txt"]}
JSON
python3 tests/llm_replay_server.py testdata/llm/replies "$tmp/script.json" "$tmp/log.jsonl" \
  >"$tmp/port" 2>"$tmp/server.err" &
server=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(awk '{print $2}' "$tmp/port")

start=$(date +%s.%N)
(cd "$repo" && KERNELSMITH_LLM_KEY=sk-local-replay-server "$bin" -q optimize --proposer llm \
   --rounds "$rounds" ${KS_OPT_ARGS:-} -k saxpy_kernel -k gelu_forward_kernel -k softmax_rows_kernel \
   --llm-url "http://127.0.0.1:$port/v1" --llm-model replay-model --json .) \
  >"$tmp/optimize.json" 2>"$tmp/optimize.err"
opt_rc=$?
end=$(date +%s.%N)
(cd "$repo" && "$bin" apply) >"$tmp/patch.diff" 2>"$tmp/apply.err"
apply_rc=$?

dev=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
label=$(echo "${dev:-gpu}" | sed 's/NVIDIA //; s/ /-/g' | tr 'A-Z' 'a-z')
mkdir -p "$out"
python3 - "$tmp" "$repo/.kernelsmith/kernelsmith.db" "$out/llm-$label-$(date +%F)" "$dev" \
  "$opt_rc" "$apply_rc" "$start" "$end" <<'PY'
import json, sqlite3, sys
tmp, dbpath, base, dev, opt_rc, apply_rc, start, end = sys.argv[1:]
opt = json.load(open(f"{tmp}/optimize.json")) if int(opt_rc) in (0, 1) else {}
db = sqlite3.connect(dbpath)
run = db.execute("SELECT max(id) FROM runs").fetchone()[0]
variants = [dict(zip(("kernel", "id", "parent", "proposer", "techniques", "plan", "verdict",
                      "speedup", "reason"), r)) for r in db.execute("""
    SELECT k.name, v.id, v.parent, v.proposer, v.techniques, v.plan, e.verdict, e.speedup, e.reason
    FROM variants v JOIN kernels k ON k.id = v.kernel
    LEFT JOIN evaluations e ON e.id = (SELECT max(id) FROM evaluations WHERE variant = v.id)
    WHERE k.run = ? ORDER BY v.id""", (run,))]
calls = [dict(zip(("role", "status", "prompt_tokens", "response_tokens"), r)) for r in db.execute(
    "SELECT role, status, prompt_tokens, response_tokens FROM llm_calls WHERE run = ?", (run,))]
memory = [r[0] for r in db.execute("SELECT text FROM memory WHERE kind = 'insight' ORDER BY id")]
patch = open(f"{tmp}/patch.diff").read()
result = {"device": dev, "date": __import__("datetime").date.today().isoformat(),
          "command": "bench/llm/run.sh", "optimize_exit": int(opt_rc), "apply_exit": int(apply_rc),
          "seconds": float(end) - float(start), "kernels": opt.get("kernels", []),
          "variants": variants, "llm_calls": calls, "memory": memory,
          "patch_lines": patch.count("\n"), "patch": patch}
json.dump(result, open(base + ".json", "w"), indent=1)
lines = [f"# LLM proposer end to end on {dev}, {result['date']}", "",
         "Command: `bench/llm/run.sh` (a local server replays replies written for the test; "
         "the GPU judge verifies and times every child; `apply` writes the patch).", "",
         "| kernel | speedup | verdict | techniques | requests | plans | children | rejected |",
         "|---|---|---|---|---|---|---|---|"]
for k in opt.get("kernels", []):
    l = k.get("llm", {})
    rej = ", ".join(f"{n} {c}" for n, c in l.get("rejected", {}).items()) or "-"
    lines.append(f"| {k['kernel']} | {k.get('speedup', 1):.2f}x | {k.get('verdict', '-')} | "
                 f"{k.get('techniques', '')} | {l.get('requests', 0)} | {l.get('plans', 0)} | "
                 f"{l.get('children', 0)} | {rej} |")
lines += ["", "Verdicts of the model's variants:", ""]
from collections import Counter
c = Counter((v["kernel"], v["verdict"]) for v in variants if v["proposer"] == "llm")
for (k, verdict), n in sorted(c.items(), key=lambda x: (x[0][0], str(x[0][1]))):
    lines.append(f"- {k}: {n} {verdict}")
wrong = [v for v in variants if v["verdict"] == "WRONG"]
if wrong:
    lines += ["", "Rejected by the judge (first):", "", f"- {wrong[0]['kernel']} variant "
              f"{wrong[0]['id']}: {wrong[0]['reason']}"]
lines += ["", f"Memory entries: {len(memory)}", ""] + [f"- {m.split(chr(9))[-1][:160]}" for m in memory[:4]]
lines += ["", f"Patch: {result['patch_lines']} lines, `apply` exit {apply_rc}."]
open(base + ".md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
echo "wrote $out/llm-$label-$(date +%F).{json,md}"
