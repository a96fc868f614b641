#!/usr/bin/env bash
# rewrite on kernels with no spec, without a GPU: testdata/legacy's kernels
# (dim3 locals read from their declarations, macro sizes) from their launch
# sites alone, a kernel whose
# block is a macro (launch_bounds reads it; vectorize's guards stay
# symbolic), and testdata/capture's axpy with a capture (written here in the
# format of docs/capture-format.md) whose sizes the rules then evaluate at.
# Usage: rewrite_cli.sh KERNELSMITH_CC TESTDATA
set -u
bin=$(realpath "$1")
data=$(realpath "$2")
tmp=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
failures=0
check() { # name command...
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}
has() { grep -qF -- "$2" "$1"; }

# --- legacy: no spec, dim3 locals --------------------------------------
(cd "$data/legacy" && "$bin" --color=never rewrite --no-compdb gemm_kernel --rule restrict --compile gemm \
  >"$tmp/r.out" 2>"$tmp/r.err")
check "legacy gemm_kernel --rule restrict: exit 0" [ $? -eq 0 ]
check "... the variant, restrict on its pointers" has "$tmp/r.out" "DATA_TYPE *__restrict__ a"
check "... renamed" has "$tmp/r.out" "kernel gemm_kernel_ks_variant"
check "... a note says there are no sizes (the launch is known)" has "$tmp/r.err" \
  "gemm_kernel has no spec and no --capture: no scalar or buffer length is known; guards stay symbolic"

(cd "$data/legacy" && "$bin" --color=never rewrite --no-compdb gemm_kernel --rule launch_bounds --compile gemm \
  >"$tmp/lb.out" 2>"$tmp/lb.err")
check "legacy gemm_kernel --rule launch_bounds: exit 0" [ $? -eq 0 ]
check "... the block of its dim3 local (32 x 8)" has "$tmp/lb.out" \
  "__launch_bounds__(256) __global__ void gemm_kernel_ks_variant"

# A dim3 local assigned after its declaration is not read.
mkdir "$tmp/late"
cat >"$tmp/late/late.cu" <<'CU'
__global__ void bump(int *v) { v[threadIdx.x] += 1; }
void run(int *v, int wide)
{
  dim3 threads(64);
  if (wide)
    threads = dim3(128);
  bump<<<1, threads>>>(v);
}
CU
(cd "$tmp" && "$bin" --color=never rewrite --no-compdb bump --rule launch_bounds late \
  >"$tmp/late.out" 2>"$tmp/late.err")
check "a dim3 local assigned later: launch_bounds does not apply" [ $? -eq 1 ]
check "... its one line names the unknown block and why" has "$tmp/late.err" \
  "rewrite: launch_bounds does not apply to bump: its block does not evaluate at the timed size: 'block_x * block_y * block_z' needs block_x, which is not known without a spec or capture (the launch site's block 'threads' (late.cu:7) cannot be evaluated: 'threads' is a dim3 local variable of run)"
check "... nothing on stdout" [ ! -s "$tmp/late.out" ]

# DIR is made when missing, and the folders above it.
(cd "$data/legacy" && "$bin" --color=never rewrite --no-compdb mvt_kernel1 --each-rule "$tmp/each/mvt" mvt \
  >/dev/null 2>"$tmp/each.err")
check "legacy mvt_kernel1 --each-rule: exit 0" [ $? -eq 0 ]
nrules=$("$bin" rewrite --list | awk 'NR > 1' | wc -l)
check "... one file per rule" [ "$(ls "$tmp/each/mvt" | wc -l)" -eq "$nrules" ]
check "... restrict applied" has "$tmp/each/mvt/mvt_kernel1.restrict.cu.txt" "techniques: restrict"
check "... block from the dim3 locals' launch" has "$tmp/each/mvt/mvt_kernel1.block.cu.txt" \
  "launch grid = dim3(ceil_div(grid_x * block_x, 64), grid_y, grid_z), block = 64"
check "... grid_stride reads the grid's 16 blocks" has "$tmp/each/mvt/mvt_kernel1.grid_stride.cu.txt" \
  "its grid (16 blocks) is no larger than 132 SMs x 1"

# --- a macro block size: the parts of the launch that evaluate ---------
mkdir "$tmp/src"
cat >"$tmp/src/halve.cu" <<'CU'
#define THREADS 128
__global__ void halve(float *dst, const float *src, int count)
{
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  if (g < count)
    dst[g] = 0.5f * src[g];
}
void halve_all(float *dst, const float *src, int count)
{
  halve<<<(count + THREADS - 1) / THREADS, THREADS>>>(dst, src, count);
}
CU
(cd "$tmp" && "$bin" --color=never rewrite --no-compdb halve --rule launch_bounds --compile src \
  >"$tmp/h.out" 2>"$tmp/h.err")
check "macro block: launch_bounds applies: exit 0" [ $? -eq 0 ]
check "... with the block the site gives" has "$tmp/h.out" "__launch_bounds__(128) __global__ void halve_ks_variant"
check "... the note names only the grid unknown, and why" has "$tmp/h.err" \
  "'count' is passed as parameter 'count', which has no value without a spec or capture"
(cd "$tmp" && "$bin" --color=never rewrite --no-compdb halve --rule vectorize --compile src \
  >"$tmp/v.out" 2>"$tmp/v.err")
check "vectorize without sizes: exit 0" [ $? -eq 0 ]
check "... its guards symbolic" has "$tmp/v.out" "requires grid_x * block_x >= count"
check "... and its alignment guards" has "$tmp/v.out" "requires aligned(src, 16)"

# --- a capture gives the sizes -----------------------------------------
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
(cd "$data/capture" && "$bin" --color=never rewrite --no-compdb axpy --rule block=128 . \
  >"$tmp/nc.out" 2>"$tmp/nc.err")
check "axpy without a capture: block=128 does not apply" [ $? -eq 1 ]
check "... its grid's n has no value" has "$tmp/nc.err" "'n' is passed as parameter 'n', which has no value"
(cd "$data/capture" && "$bin" --color=never rewrite --no-compdb axpy --capture "$tmp/axpy.kscap" \
  --rule block=128 --compile . >"$tmp/c.out" 2>"$tmp/c.err")
check "axpy --capture: block=128 applies: exit 0" [ $? -eq 0 ]
check "... the new block" has "$tmp/c.out" "block = 128"
check "... no note about missing sizes" bash -c "! grep -q 'no spec and no --capture' '$tmp/c.err'"
mkdir "$tmp/each-cap"
(cd "$data/capture" && "$bin" --color=never rewrite --no-compdb axpy --capture "$tmp/axpy.kscap" \
  --each-rule "$tmp/each-cap" . >/dev/null 2>&1)
check "axpy --capture --each-rule: exit 0" [ $? -eq 0 ]
check "... launch_bounds from the captured block" has "$tmp/each-cap/axpy.launch_bounds.cu.txt" "__launch_bounds__(256)"
(cd "$data/capture" && "$bin" --color=never rewrite --no-compdb gather --capture "$tmp/axpy.kscap" \
  --rule restrict . >/dev/null 2>"$tmp/g.err")
check "a kernel the capture does not hold: exit 1" [ $? -eq 1 ]
check "... saying so" has "$tmp/g.err" "holds no launch of it"

# A kernel in a .cu fragment its includer's typedef and macro complete
# (testdata/frontend/fragments.cu): sliced from the includer, it compiles.
(cd "$data/frontend" && "$bin" --color=never -q rewrite --no-compdb srad_scale --rule restrict \
  --compile . >"$tmp/fr.out" 2>"$tmp/fr.err")
check "a kernel in an included .cu fragment: restrict applies and compiles" [ $? -eq 0 ]
check "... its slice has the includer's typedef" has "$tmp/fr.out" "fp *__restrict__ d_I"

# launch_bounds guards the original's block at the bound's size; block then
# gives the variant a constant block and moves the bound with it, and the
# guard goes (it would only turn the variant off at other block sizes).
"$bin" --color=never rewrite saxpy_kernel --rule launch_bounds "$data/apps/saxpy" >"$tmp/lb.out" 2>/dev/null
check "launch_bounds guards the original's block" has "$tmp/lb.out" "requires block_x * block_y * block_z == 256"
"$bin" --color=never rewrite saxpy_kernel --rule launch_bounds --rule block=128 "$data/apps/saxpy" \
  >"$tmp/lbb.out" 2>/dev/null
check "... block=128 after it: the bound follows" has "$tmp/lbb.out" "__launch_bounds__(128) __global__"
check "... and the stale guard is gone" [ "$(grep -c 'block_z == 256' "$tmp/lbb.out")" -eq 0 ]

echo "rewrite_cli: $failures failed"
[ "$failures" -eq 0 ]
