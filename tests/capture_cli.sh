#!/usr/bin/env bash
# optimize and replay with a capture file, without a GPU: a capture of
# testdata/capture's axpy (written here in the format of
# docs/capture-format.md) makes the spec-less kernel searchable with the
# stand-in judge, the other spec-less kernels are left out with the line
# saying how to capture them, apply's record names the capture, and replay
# says there is no GPU. Usage: capture_cli.sh KERNELSMITH_CC TESTDATA
set -u
bin=$1
data=$2
tmp=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
failures=0
check() { # name command...
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}

python3 - "$tmp/axpy.kscap" <<'PY'
import json, struct, sys, zlib
def rec(t, payload):
    return struct.pack("<IIQ", t, 0, len(payload)) + payload + struct.pack("<I", zlib.crc32(payload))
n = 1000
before = struct.pack("<%df" % (2 * n), *[float(i % 7) for i in range(2 * n)])
after = before[: 4 * n] + struct.pack("<%df" % n, *[2.0 * (i % 7) + ((n + i) % 7) for i in range(n)])
blobs = rec(2, struct.pack("<Q", 1) + before) + rec(2, struct.pack("<Q", 2) + after)
base = 0x7F0000000000
launch = {"kernel": "_Z4axpyPfS_fi", "launch": 0, "grid": [4, 1, 1], "block": [256, 1, 1],
          "smem": 0, "stream": "0x0", "device": 0, "api": "cuLaunchKernel", "over_limit": False,
          "bytes_needed": 8 * n, "bytes": 16 * n,
          "params": [
              {"index": 0, "offset": 0, "size": 8, "kind": "pointer",
               "value": struct.pack("<Q", base).hex(), "memory": "device", "base": hex(base),
               "alloc_size": 8 * n, "ptr_offset": 0, "before": 1, "after": 2},
              {"index": 1, "offset": 8, "size": 8, "kind": "pointer",
               "value": struct.pack("<Q", base + 4 * n).hex(), "memory": "device",
               "base": hex(base), "alloc_size": 8 * n, "ptr_offset": 4 * n, "before": 1, "after": 2},
              {"index": 2, "offset": 16, "size": 4, "kind": "scalar",
               "value": struct.pack("<f", 2.0).hex()},
              {"index": 3, "offset": 20, "size": 4, "kind": "scalar",
               "value": struct.pack("<i", n).hex()}],
          "blobs": [{"id": 1, "size": len(before), "crc32": zlib.crc32(before)},
                    {"id": 2, "size": len(after), "crc32": zlib.crc32(after)}]}
data = b"KSCAP\0\1\0" + blobs + rec(1, json.dumps(launch).encode()) + rec(3, struct.pack("<Q", 1))
open(sys.argv[1], "wb").write(data)
PY

cp -r "$data/capture" "$tmp/src"
(cd "$tmp" && "$bin" optimize --stand-in-judge --capture axpy.kscap --rounds 2 --json --store s1 src \
  >"$tmp/1.json" 2>"$tmp/1.err")
rc=$?
check "optimize from a capture: exit 0" [ $rc -eq 0 ]
check "... axpy searched" python3 -c "
import json,sys; o=json.load(open('$tmp/1.json'))
k={k['kernel']:k for k in o['kernels']}
sys.exit(0 if k['axpy']['status'] not in ('skipped','failed') and k['axpy']['evaluated'] > 0
         and k['axpy']['inputs'] == 'capture' and k['axpy']['captured_launches'] == 1 else 1)"
check "... the spec-less kernels without captures left out" python3 -c "
import json,sys; o=json.load(open('$tmp/1.json'))
sys.exit(0 if [k['kernel'] for k in o['kernels']] == ['axpy'] else 1)"
check "... the store names the capture" python3 -c "
import sqlite3,sys; db=sqlite3.connect('$tmp/s1/kernelsmith.db')
r=db.execute(\"SELECT spec FROM kernels WHERE name='axpy'\").fetchone()
sys.exit(0 if r and r[0].startswith('capture:') and r[0].endswith('axpy.kscap') else 1)"

# Two capture files: the second's launches join the first's.
cp "$tmp/axpy.kscap" "$tmp/again.kscap"
(cd "$tmp" && "$bin" optimize --stand-in-judge --capture axpy.kscap --capture again.kscap \
  --rounds 1 --json --store s5 src >"$tmp/6.json" 2>"$tmp/6.err")
check "two capture files: exit 0" [ $? -eq 0 ]
check "... axpy searched" python3 -c "
import json,sys; o=json.load(open('$tmp/6.json'))
sys.exit(0 if [k['kernel'] for k in o['kernels']] == ['axpy'] and o['kernels'][0]['evaluated'] > 0
         and o['kernels'][0]['captured_launches'] == 2 else 1)"

# A kernel asked for by name with neither: the line says how to capture it.
(cd "$tmp" && "$bin" optimize --stand-in-judge --capture axpy.kscap -k gather --store s2 src \
  >/dev/null 2>"$tmp/2.err")
check "gather by name: not searched, one line" grep -q "gather has neither a spec nor captured launches, so it is not searched: write a spec (docs/spec.md) or capture its inputs with kernelsmith-cc profile --capture gather -- YOUR_APP" "$tmp/2.err"

# A corrupt capture: one line naming the file, before anything is searched.
# Captured kernels that are not under the paths: said, by name.
mkdir -p "$tmp/elsewhere"
sed 's/axpy/axpz/g' "$data/capture/kernels.cu" >"$tmp/elsewhere/other.cu"
(cd "$tmp" && "$bin" optimize --stand-in-judge --capture axpy.kscap --store s4 elsewhere \
  >/dev/null 2>"$tmp/5.err")
check "a capture of kernels elsewhere: exit 1" [ $? -eq 1 ]
check "... naming the kernel" grep -q "axpy(float\*, float\*, float, int) was captured but is not under the paths scanned" "$tmp/5.err"

head -c 5000 "$tmp/axpy.kscap" >"$tmp/cut.kscap"
(cd "$tmp" && "$bin" optimize --stand-in-judge --capture cut.kscap --store s3 src >/dev/null 2>"$tmp/3.err")
rc=$?
check "a cut capture: exit 1" [ $rc -eq 1 ]
check "... naming the file and the record" grep -q "cut.kscap: record 1 at byte 8: length 8008 runs past the end of the file" "$tmp/3.err"

# A spec drafted from the capture.
"$bin" spec --from-capture "$tmp/axpy.kscap" axpy "$tmp/src" >"$tmp/draft.txt" 2>"$tmp/draft.err"
check "spec --from-capture: exit 0" [ $? -eq 0 ]
check "... the timed size as captured" grep -q "size timed: n = 1000   # as captured" "$tmp/draft.txt"
check "... y's length inferred" grep -q "inout y\[n\] uniform(0, 6)" "$tmp/draft.txt"
"$bin" spec --json --from-capture "$tmp/axpy.kscap" axpy "$tmp/src" >/dev/null 2>&1
check "spec --from-capture --json: usage error" [ $? -eq 2 ]

# replay needs a GPU; without one it says so.
if ! nvidia-smi >/dev/null 2>&1; then
  "$bin" replay "$tmp/axpy.kscap" "$tmp/src" >/dev/null 2>"$tmp/4.err"
  check "replay without a GPU: exit 1" [ $? -eq 1 ]
fi
"$bin" replay >/dev/null 2>&1
check "replay without a file: usage error" [ $? -eq 2 ]

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
