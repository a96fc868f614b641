#!/usr/bin/env bash
# optimize --devices 0,0 with the real judge: two kernelsmith-worker
# processes on the CPU stand-in for the driver (fake_cuda.c, which runs the
# GELU fixture's variants as its C twin), each with its own context and
# ceilings. Checked: the run ends, both workers judged, the store names who
# judged every evaluation, the run's device text names the workers. (The
# verdicts are the stand-in driver's timings: not compared.)
set -u
bin=$(realpath "$1") worker=$(realpath "$2") fake=$(realpath "$3") fixtures=$(realpath "$4")
. "$(dirname "$0")/check.sh"
printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' "$fake" "$worker" >"$tmp/worker"
chmod +x "$tmp/worker"
export KERNELSMITH_WORKER="$tmp/worker" XDG_CACHE_HOME="$tmp/cache"

"$bin" -q optimize --devices 0,0 --rounds 2 --max-evals 8 --sample-seconds 0.05 --no-confirm \
  --compiler nvrtc --store "$tmp/s" --json "$fixtures/warm/gelu_small.cu" >"$tmp/out.json" 2>"$tmp/err"
check "two workers on the fake GPU: exit 0" [ $? -eq 0 ]
check "... 8 evaluations, both workers judged, each named" python3 - "$tmp/s/kernelsmith.db" "$tmp/out.json" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
d = json.load(open(sys.argv[2]))
assert d["measured"] is True and d["kernels"][0]["evaluated"] == 8, d["kernels"]
(missing,) = db.execute("SELECT count(*) FROM evaluations e LEFT JOIN eval_devices d "
                        "ON d.evaluation = e.id WHERE d.evaluation IS NULL").fetchone()
assert missing == 0, missing
workers = {w for (w,) in db.execute("SELECT DISTINCT d.worker FROM eval_devices d JOIN "
                                    "evaluations e ON e.id = d.evaluation WHERE e.variant IS NOT NULL")}
assert workers == {0, 1}, workers
(device,) = db.execute("SELECT device FROM runs").fetchone()
assert device.endswith(", 2 workers on devices 0,0"), device
PY
echo "$fails failure(s)"
[ $fails -eq 0 ]
