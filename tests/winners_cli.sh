#!/usr/bin/env bash
# One winner path, without a GPU, for a kernel nobody wrote a spec for:
# testdata/winners/mm.cu (sizes as macros, a dim3 launch, a C89 loop) is
# optimized from a capture (written here in the format of
# docs/capture-format.md, three separate allocations, no scalar giving a
# length) by the stand-in judge; its run is then marked as judged on sm_90
# and a variant with disjoint() guards named its winner, FAST (a test
# fixture standing for a GPU run, as apply_cli.sh's: the stand-in's numbers
# are not measurements). Then: apply dispatches the launch with the lengths
# the kernel's own bounds prove (no "left as written"); the launcher
# rewrites the compile with the same dispatch; status shows the winner;
# the winner file is an export (deleted, apply still works; export
# --winners writes it again); a store edited by hand is refused.
# usage: winners_cli.sh KERNELSMITH_CC TESTDATA
set -u
bin=$(realpath "$1")
data=$(realpath "$2")
. "$(dirname "$0")/check.sh"
repo=$tmp/repo
mkdir -p "$repo"
cp "$data/winners/mm.cu" "$repo/"
(cd "$repo" && git init -q . && git add -A && git -c user.email=t@t -c user.name=t commit -qm mm)

python3 - "$tmp/mm.kscap" <<'PY'
import json, struct, sys, zlib
NI, NJ, NK = 64, 48, 32
def rec(t, payload):
    return struct.pack("<IIQ", t, 0, len(payload)) + payload + struct.pack("<I", zlib.crc32(payload))
a = [float((i * 7) % 5) for i in range(NI * NK)]
b = [float((i * 3) % 4) for i in range(NK * NJ)]
c = [1.0] * (NI * NJ)
c2 = [c[i * NJ + j] + sum(a[i * NK + k] * b[k * NJ + j] for k in range(NK))
      for i in range(NI) for j in range(NJ)]
pack = lambda v: struct.pack("<%df" % len(v), *v)
snaps = [pack(a), pack(b), pack(c), pack(a), pack(b), pack(c2)]
blobs = b"".join(rec(2, struct.pack("<Q", i + 1) + s) for i, s in enumerate(snaps))
bases = [0x7F0000000000, 0x7F0000100000, 0x7F0000200000]
sizes = [4 * NI * NK, 4 * NK * NJ, 4 * NI * NJ]
params = [{"index": p, "offset": 8 * p, "size": 8, "kind": "pointer",
           "value": struct.pack("<Q", bases[p]).hex(), "memory": "device", "base": hex(bases[p]),
           "alloc_size": sizes[p], "ptr_offset": 0, "before": p + 1, "after": p + 4}
          for p in range(3)]
launch = {"kernel": "_Z9mm_kernelPfS_S_", "launch": 0, "grid": [2, 8, 1], "block": [32, 8, 1],
          "smem": 0, "stream": "0x0", "device": 0, "api": "cuLaunchKernel", "over_limit": False,
          "bytes_needed": sum(sizes), "bytes": 2 * sum(sizes), "params": params,
          "blobs": [{"id": i + 1, "size": len(s), "crc32": zlib.crc32(s)} for i, s in enumerate(snaps)]}
data = b"KSCAP\0\1\0" + blobs + rec(1, json.dumps(launch).encode()) + rec(3, struct.pack("<Q", 1))
open(sys.argv[1], "wb").write(data)
PY

(cd "$repo" && "$bin" optimize --stand-in-judge --capture "$tmp/mm.kscap" --rounds 3 --json . \
  >"$tmp/opt.json" 2>"$tmp/opt.err")
check "optimize from the capture: exit 0" [ $? -eq 0 ]
check "... the kernel searched from its capture" python3 -c "
import json,sys; k=json.load(open('$tmp/opt.json'))['kernels'][0]
sys.exit(0 if k['kernel'] == 'mm_kernel' and k['inputs'] == 'capture' and k['evaluated'] > 0 else 1)"

# The fixture: judged on sm_90, and a variant that needs disjoint() the
# confirmed FAST winner (its newest evaluation says so).
mark_sm90 "$repo/.kernelsmith"
python3 - "$repo/.kernelsmith/kernelsmith.db" >"$tmp/winner.txt" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
row = db.execute("SELECT v.id, v.kernel FROM variants v WHERE v.requires LIKE '%disjoint(%' "
                 "AND v.requires NOT LIKE '%len_%' ORDER BY v.id LIMIT 1").fetchone()
if not row:
    sys.exit("no variant with a disjoint() guard")
vid, kid = row
e = db.execute("SELECT max(id) FROM evaluations WHERE variant = ?", (vid,)).fetchone()[0]
if e is None:
    db.execute("INSERT INTO evaluations (kernel, variant, created, verdict, speedup, json) "
               "SELECT kernel, ?, created, 'FAST', 1.5, json FROM evaluations WHERE kernel = ? "
               "AND variant IS NULL LIMIT 1", (vid, kid))
else:
    db.execute("UPDATE evaluations SET verdict = 'FAST', speedup = 1.5 WHERE id = ?", (e,))
db.execute("UPDATE kernels SET winner = ? WHERE id = ?", (vid, kid))
db.commit()
print(vid)
PY
check "fixture: a winner with disjoint() guards" test -s "$tmp/winner.txt"

(cd "$repo" && "$bin" apply >"$tmp/patch" 2>"$tmp/apply.err")
check "apply: exit 0" [ $? -eq 0 ]
check "apply: the launch is dispatched" grep -q "if (!ks_site.take(" "$tmp/patch"
check "... nothing left as written" sh -c "! grep -q 'left as written\|not applied' '$tmp/apply.err'"
check "... disjoint() with the lengths the bounds prove (a: 64 * 32)" grep -q "(a_gpu), ksrt::bytes_of((2048), sizeof(\*(a_gpu)))" "$tmp/patch"
check "... (c: 64 * 48)" grep -q "(c_gpu), ksrt::bytes_of((3072), sizeof(\*(c_gpu)))" "$tmp/patch"
sed -n 's/^warning: //p' "$tmp/apply.err" | sed 's/^/    /'
(cd "$repo" && git apply "$tmp/patch")
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
if [ -x "$nvcc" ]; then
  (cd "$repo" && "$nvcc" -std=c++17 -arch=sm_90 -c mm.cu -o "$tmp/mm.o" 2>"$tmp/nvcc.err")
  check "the patched file compiles with nvcc" [ $? -eq 0 ]
fi
(cd "$repo" && git checkout -q . && rm -f kernelsmith_dispatch.h)

# The launcher rewrites the same compile with the same dispatch.
if [ -x "$nvcc" ]; then
  (cd "$repo" && "$bin" "$nvcc" -std=c++17 -arch=sm_90 -c mm.cu -o "$tmp/l.o" 2>"$tmp/l.err")
  check "launcher: exit 0" [ $? -eq 0 ]
  lcopy=$repo/.kernelsmith/build/$(printf %s "$(realpath "$tmp")/l.o.ks.cu" | sha256sum | cut -c1-16)/l.o.ks.cu
  check "launcher: rewritten (the copy in the store)" test -f "$lcopy"
  check "... the same guards as apply" sh -c "grep -o 'ksrt::disjoint([^;]*' '$lcopy' | head -1 | grep -q 'bytes_of((2048)'"
  check "... no warning" test ! -s "$tmp/l.err"
  check "stats: rewritten 1" sh -c "cd '$repo' && '$bin' stats | grep -q 'rewritten 1,'"
fi

# A launch edited since the run (its dim3 block local) is left as written;
# an edit after the launch changes nothing.
cp "$repo/mm.cu" "$tmp/mm.orig"
sed -i 's/dim3 block(32, 8);/dim3 block(16, 16);/' "$repo/mm.cu"
(cd "$repo" && "$bin" apply >"$tmp/edited.patch" 2>"$tmp/edited.err")
check "an edited launch: left as written" sh -c "! grep -q 'ks_site.take(' '$tmp/edited.patch'"
check "... saying why, in one line" grep -q "mm.cu:[0-9]*: mm_kernel: left as written: this launch changed since the kernel was optimized" "$tmp/edited.err"
cp "$tmp/mm.orig" "$repo/mm.cu"
sed -i 's/^	cudaDeviceSynchronize();$/	cudaDeviceSynchronize(); \/\/ waits/' "$repo/mm.cu"
(cd "$repo" && "$bin" apply >"$tmp/after.patch" 2>/dev/null)
check "an edit after the launch: still dispatched" grep -q "ks_site.take(" "$tmp/after.patch"
cp "$tmp/mm.orig" "$repo/mm.cu"

# status shows the winner; the winner file is an export.
(cd "$repo" && "$bin" status --json >"$tmp/status.json" 2>/dev/null)
check "status: the winner apply uses" python3 -c "
import json,sys; k=json.load(open('$tmp/status.json'))['kernels'][0]
sys.exit(0 if k['best_variant'] == int(open('$tmp/winner.txt').read()) and k['inputs'] == 'capture' else 1)"
rm -rf "$repo/.kernelsmith/winners"
(cd "$repo" && "$bin" apply >"$tmp/patch2" 2>"$tmp/apply2.err")
check "without the winner file: the same patch" cmp -s "$tmp/patch" "$tmp/patch2"
(cd "$repo" && "$bin" export --winners 2>"$tmp/export.err")
check "export --winners writes it again" grep -q "kernelsmith-variant" "$repo/.kernelsmith/winners/mm_kernel.cu"
check "... saying it is an export" grep -q "An export of the results store" "$repo/.kernelsmith/winners/mm_kernel.cu"

# A store edited by hand: refused, saying why.
python3 - "$repo/.kernelsmith/kernelsmith.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE variants SET source = replace(source, '+=', '-=') WHERE id IN (SELECT winner FROM kernels)")
db.commit()
PY
(cd "$repo" && "$bin" apply >"$tmp/patch3" 2>"$tmp/apply3.err")
check "an edited variant row: apply exits 1" [ $? -eq 1 ]
check "... saying the store was edited" grep -q "does not match its hash" "$tmp/apply3.err"
[ $fails -eq 0 ] && echo "winners_cli: all passed" || echo "winners_cli: $fails failed"
[ $fails -eq 0 ]
