#!/usr/bin/env bash
# The CUPTI injection library of `profile` on a real GPU.
#   inject_gpu.sh LIB SAXPY [WORKDIR]
# LIB is libkernelsmith_inject.so, SAXPY the built testdata app
# (make -C testdata/apps/saxpy, or the apps_compile test's build).
# Checks, for saxpy (runtime launches, <<<>>>):
#   - stdout (timings masked) and the exit code are those of a plain run, and
#     the library writes nothing to stderr;
#   - the profile has a start line, kernel lines for saxpy_kernel with
#     grid/block as launched and "api":"runtime", and an end line whose count
#     matches;
# and, when nvcc is here, for a small program of our own that launches with
# cuLaunchKernel and cuLaunchKernelEx: "api":"driver" and the launch's
# dimensions and dynamic shared memory; then the same program killed with
# SIGKILL 2.5 s after its kernels: the periodic flush has already put them in
# the file, and there is no end line. Then capture: the driver-API program's
# launch and saxpy built with the shared runtime, each capture file read
# back (records, CRCs, parameters, snapshots before and after).
# Exits 77 (skipped) where there is no NVIDIA GPU.
set -u
lib=$1 saxpy=$2
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: no NVIDIA GPU"
  exit 77
fi
command -v python3 >/dev/null || { echo "FAIL: python3 is needed"; exit 1; }
[ -f "$lib" ] || { echo "FAIL: no library $lib"; exit 1; }
[ -x "$saxpy" ] || { echo "FAIL: no app $saxpy (make -C testdata/apps/saxpy)"; exit 1; }
work=${3:-$(mktemp -d)}
mkdir -p "$work"
fail=0

# Timings differ between runs; everything else must not.
mask() { sed -E 's/[0-9]+(\.[0-9]+)? ms/N ms/g' "$1"; }

# --- saxpy: runtime launches ---
n=100000
"$saxpy" $n >"$work/plain.out" 2>"$work/plain.err"
plain_rc=$?
rm -f "$work/saxpy.jsonl"
CUDA_INJECTION64_PATH=$lib KERNELSMITH_PROFILE_OUT=$work/saxpy.jsonl \
  "$saxpy" $n >"$work/inj.out" 2>"$work/inj.err"
inj_rc=$?
if [ $plain_rc != $inj_rc ]; then
  echo "FAIL: exit code $inj_rc with the library, $plain_rc without"
  fail=1
fi
if ! diff -u <(mask "$work/plain.out") <(mask "$work/inj.out"); then
  echo "FAIL: stdout differs with the library"
  fail=1
fi
if [ -s "$work/inj.err" ]; then
  echo "FAIL: stderr with the library:"
  cat "$work/inj.err"
  fail=1
fi
# saxpy launches one kernel, then times it (warm-up and repetitions): at
# least 2 launches, all with grid ceil(n/256) and block 256.
python3 - "$work/saxpy.jsonl" $(( (n + 255) / 256 )) <<'EOF' || fail=1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
grid = int(sys.argv[2])
assert rows, "empty profile"
assert rows[0]["type"] == "start" and rows[0]["version"] == 1, rows[0]
assert rows[0]["cupti_version"] > 0 and rows[0]["pid"] > 0, rows[0]
assert rows[-1]["type"] == "end", rows[-1]
kernels = [r for r in rows if r["type"] == "kernel"]
assert rows[-1]["kernels"] == len(kernels), (rows[-1], len(kernels))
assert all(r["type"] in ("kernel", "dropped") for r in rows[1:-1])
saxpy = [k for k in kernels if "saxpy_kernel" in k["name"]]
assert len(saxpy) >= 2, f"{len(saxpy)} saxpy_kernel lines"
for k in saxpy:
    assert k["grid"] == [grid, 1, 1] and k["block"] == [256, 1, 1], k
    assert k["api"] == "runtime", k
    assert k["smem_dynamic"] == 0 and k["end_ns"] >= k["start_ns"] > 0, k
    assert rows[0]["time_ns"] <= k["start_ns"] <= rows[-1]["time_ns"], (rows[0], k, rows[-1])
assert len({k["correlation"] for k in saxpy}) == len(saxpy), "correlation ids repeat"
print(f"saxpy: {len(saxpy)} kernel lines, api runtime, start and end lines")
EOF

# --- driver API launches, and a crash ---
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
command -v "$nvcc" >/dev/null 2>&1 || nvcc=$(command -v nvcc || true)
if [ -z "$nvcc" ]; then
  echo "note: no nvcc, the driver-API and crash checks are skipped"
  exit $fail
fi
cat >"$work/drv.cu" <<'EOF'
#include <cuda.h>
#include <cuda_runtime.h>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <unistd.h>
extern "C" __global__ void ks_driver_kernel(int *out) {
  extern __shared__ int scratch[];
  scratch[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = scratch[threadIdx.x];
}
int main(int argc, char **argv) {
  int *d = nullptr;
  if (cudaMalloc(&d, 64 * sizeof(int)) != cudaSuccess) return 1;
  cudaFunction_t f;
  if (cudaGetFuncBySymbol(&f, (const void *)ks_driver_kernel) != cudaSuccess) return 1;
  void *args[] = {&d};
  if (cuLaunchKernel((CUfunction)f, 2, 1, 1, 32, 1, 1, 32 * sizeof(int), 0, args, nullptr))
    return 1;
  CUlaunchConfig cfg;
  std::memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = 3; cfg.gridDimY = 1; cfg.gridDimZ = 1;
  cfg.blockDimX = 64; cfg.blockDimY = 1; cfg.blockDimZ = 1;
  cfg.sharedMemBytes = 64 * sizeof(int);
  if (cuLaunchKernelEx(&cfg, (CUfunction)f, args, nullptr)) return 1;
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  std::printf("driver: PASS\n");
  std::fflush(stdout);
  if (argc > 1 && std::strcmp(argv[1], "crash") == 0) {
    usleep(2500 * 1000);  // longer than the library's flush period
    std::raise(SIGKILL);
  }
  return 0;
}
EOF
if ! "$nvcc" -arch=sm_90 -o "$work/drv" "$work/drv.cu" -lcuda; then
  echo "FAIL: nvcc could not build the driver-API program"
  exit 1
fi
rm -f "$work/drv.jsonl" "$work/crash.jsonl"
if ! out=$(CUDA_INJECTION64_PATH=$lib KERNELSMITH_PROFILE_OUT=$work/drv.jsonl "$work/drv" 2>&1) ||
   [ "$out" != "driver: PASS" ]; then
  echo "FAIL: driver-API program with the library: $out"
  fail=1
fi
python3 - "$work/drv.jsonl" <<'EOF' || fail=1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert rows[0]["type"] == "start" and rows[-1]["type"] == "end", (rows[0], rows[-1])
ks = [r for r in rows if r["type"] == "kernel" and r["name"] == "ks_driver_kernel"]
assert len(ks) == 2, ks
ks.sort(key=lambda k: k["correlation"])
assert ks[0]["grid"] == [2, 1, 1] and ks[0]["block"] == [32, 1, 1], ks[0]
assert ks[0]["smem_dynamic"] == 128, ks[0]
assert ks[1]["grid"] == [3, 1, 1] and ks[1]["block"] == [64, 1, 1], ks[1]
assert ks[1]["smem_dynamic"] == 256, ks[1]
assert all(k["api"] == "driver" for k in ks), ks
print("driver: cuLaunchKernel and cuLaunchKernelEx lines, api driver")
EOF
CUDA_INJECTION64_PATH=$lib KERNELSMITH_PROFILE_OUT=$work/crash.jsonl \
  "$work/drv" crash >/dev/null 2>&1
rc=$?
if [ $rc != 137 ]; then
  echo "FAIL: the crashing program exited $rc, not 137 (SIGKILL)"
  fail=1
fi
python3 - "$work/crash.jsonl" <<'EOF' || fail=1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
assert rows and rows[0]["type"] == "start", rows
assert not any(r["type"] == "end" for r in rows), "an end line after SIGKILL"
ks = [r for r in rows if r["type"] == "kernel" and r["name"] == "ks_driver_kernel"]
assert len(ks) == 2, f"{len(ks)} kernel lines survived the crash"
print("crash: the kernels were in the file before SIGKILL, no end line")
EOF
# --- capture on the GPU: the driver-API program (CUfunction handles) and
# saxpy built with the shared runtime (CUkernel handles), each launch's
# parameters, allocations and snapshots checked in the file ---
cat >"$work/cap_check.py" <<'EOF'
import json, struct, sys, zlib
path, kernel, nparams, npointers = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
data = open(path, "rb").read()
assert data[:8] == b"KSCAP\0\1\0", "magic"
at, launches, blobs, end = 8, [], {}, False
while at < len(data):
    t, _, n = struct.unpack_from("<IIQ", data, at)
    payload = data[at + 16:at + 16 + n]
    (crc,) = struct.unpack_from("<I", data, at + 16 + n)
    assert crc == zlib.crc32(payload), f"crc at {at}"
    if t == 1:
        launches.append(json.loads(payload))
    elif t == 2:
        blobs[struct.unpack_from("<Q", payload)[0]] = len(payload) - 8
    elif t == 3:
        end = True
    at += 16 + n + 4
assert end, "no end record"
ls = [l for l in launches if kernel in l["kernel"]]
assert ls, f"no launch of {kernel} in {[l['kernel'] for l in launches]}"
l = ls[0]
assert len(l["params"]) == nparams, l["params"]
ptrs = [p for p in l["params"] if p["kind"] == "pointer"]
assert len(ptrs) == npointers, ptrs
for p in ptrs:
    assert p["before"] and p["after"], p
    assert blobs[p["before"]] == p["alloc_size"] == blobs[p["after"]], (p, blobs)
print(f"capture: {kernel}: {len(ls)} launch, {nparams} parameters, {npointers} pointers with "
      f"snapshots before and after ({sum(p['alloc_size'] for p in ptrs)} bytes)")
EOF
rm -f "$work/drv.kscap"
CUDA_INJECTION64_PATH=$lib KERNELSMITH_PROFILE_OUT=$work/drv2.jsonl KERNELSMITH_CAPTURE=ks_driver_kernel \
  KERNELSMITH_CAPTURE_OUT=$work/drv.kscap "$work/drv" >/dev/null 2>"$work/drv.cap.err" || fail=1
python3 "$work/cap_check.py" "$work/drv.kscap" ks_driver_kernel 1 1 || { cat "$work/drv.cap.err"; fail=1; }
saxpy_src=$(dirname "$0")/../testdata/apps/saxpy/saxpy.cu
if "$nvcc" -O3 -arch=sm_90 -std=c++17 -cudart shared -o "$work/saxpy_shared" "$saxpy_src"; then
  CUDA_INJECTION64_PATH=$lib KERNELSMITH_PROFILE_OUT=$work/shared.jsonl KERNELSMITH_CAPTURE=saxpy_kernel \
    KERNELSMITH_CAPTURE_OUT=$work/shared.kscap "$work/saxpy_shared" 1000 >/dev/null 2>"$work/shared.err" || fail=1
  python3 - "$work/shared.jsonl" <<'EOF' || fail=1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")]
ks = [r for r in rows if r["type"] == "kernel" and "saxpy_kernel" in r["name"]]
assert ks and all(k["api"] == "runtime" for k in ks), ks
print(f"shared runtime: {len(ks)} saxpy_kernel lines, api runtime")
EOF
  python3 "$work/cap_check.py" "$work/shared.kscap" saxpy_kernel 4 2 || { cat "$work/shared.err"; fail=1; }
else
  echo "FAIL: nvcc could not build saxpy with the shared runtime"
  fail=1
fi

[ $fail = 0 ] && echo "inject_gpu: OK"
exit $fail
