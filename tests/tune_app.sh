# Sourced by tune_cli.sh and tune_mpi.sh (after check.sh: $tmp, with
# $bin, $data): the stand-in program of tune's tests. $tmp/app.sh plays
# a CUDA program (profile, capture and verify runs), $tmp/saxpy.kscap is the
# capture it writes, newrepo DIR makes a project of two test apps.
# With the stand-in judge tune asks for no driver: the program (which
# never loads one) runs on any machine. The CPU stand-in for libcuda.so.1
# is not put on the library path: NVRTC, in the same process, must not
# meet it.
tune() { "$bin" tune "$@"; }
: >"$tmp/libfake_inject.so"
export KERNELSMITH_INJECT_LIB=$tmp/libfake_inject.so

python3 - "$tmp/saxpy.kscap" <<'PY'
import json, struct, sys, zlib
def rec(t, payload):
    return struct.pack("<IIQ", t, 0, len(payload)) + payload + struct.pack("<I", zlib.crc32(payload))
n, a = 1000, 2.5
x = struct.pack("<%df" % n, *[float(i % 5) for i in range(n)])
y = struct.pack("<%df" % n, *[float(i % 3) for i in range(n)])
y2 = struct.pack("<%df" % n, *[a * (i % 5) + (i % 3) for i in range(n)])
blobs = rec(2, struct.pack("<Q", 1) + x) + rec(2, struct.pack("<Q", 2) + y) + \
        rec(2, struct.pack("<Q", 3) + x) + rec(2, struct.pack("<Q", 4) + y2)
bx, by = 0x7F0000000000, 0x7F0000100000
def ptr(i, off, base, before, after):
    return {"index": i, "offset": off, "size": 8, "kind": "pointer",
            "value": struct.pack("<Q", base).hex(), "memory": "device", "base": hex(base),
            "alloc_size": 4 * n, "ptr_offset": 0, "before": before, "after": after}
launch = {"kernel": "_Z12saxpy_kernelifPfS_", "launch": 0, "grid": [4, 1, 1], "block": [256, 1, 1],
          "smem": 0, "stream": "0x0", "device": 0, "api": "cuLaunchKernel", "over_limit": False,
          "bytes_needed": 8 * n, "bytes": 16 * n,
          "params": [{"index": 0, "offset": 0, "size": 4, "kind": "scalar", "value": struct.pack("<i", n).hex()},
                     {"index": 1, "offset": 4, "size": 4, "kind": "scalar", "value": struct.pack("<f", a).hex()},
                     ptr(2, 8, bx, 1, 3), ptr(3, 16, by, 2, 4)],
          "blobs": [{"id": i + 1, "size": len(b), "crc32": zlib.crc32(b)} for i, b in enumerate([x, y, x, y2])]}
data = b"KSCAP\0\1\0" + blobs + rec(1, json.dumps(launch).encode()) + rec(3, struct.pack("<Q", 1))
open(sys.argv[1], "wb").write(data)
PY

cat >"$tmp/app.sh" <<'EOF'
t0=1732000000000000000
now=0
kline() {
  printf '{"type":"kernel","name":"%s","grid":[%s,1,1],"block":[256,1,1],"smem_static":0,"smem_dynamic":0,"stream":7,"device":0,"context":1,"correlation":1,"start_ns":%s,"end_ns":%s,"api":"runtime"}\n' \
    "$1" "${3:-4096}" "$((t0 + now))" "$((t0 + now + $2))" >>"$KERNELSMITH_PROFILE_OUT"
  now=$((now + $2 + 1000))
}
site() {
  [ -n "${KERNELSMITH_STATS_FILE:-}" ] &&
    echo "kernelsmith: $1 at $2: variant $3, off $4, other architecture $5, guards failed $6, no device $7" >>"$KERNELSMITH_STATS_FILE"
}
SAXPY=_Z12saxpy_kernelifPfS_
SAXPY_KS=_Z15saxpy_kernel_ksifPfS_
GELU=_Z19gelu_forward_kernelPfPKfi
LIBRARY=_ZN15cublas_internal5gemvxILi128ELi16EfEEvPKT1_PS1_i
if [ -n "${KERNELSMITH_CAPTURE:-}" ]; then kind=capture
elif [ "${KERNELSMITH_DISABLE:-}" = 1 ]; then kind=verify-off
elif [ -n "${KERNELSMITH_STATS_FILE:-}" ]; then kind=verify-on
else kind=profile; fi
echo "$kind" >>"$TUNE_LOG"
echo "app stdout ($kind)"
[ "${FAIL_IN:-}" = "$kind" ] && exit 3
if [ "${KILL_IN:-}" = "$kind" ]; then kill -9 "$PPID"; exit 0; fi
echo '{"type":"start","version":1,"pid":1,"cupti_version":24,"time_ns":1}' >>"$KERNELSMITH_PROFILE_OUT"
if [ "$kind" = verify-on ]; then
  for i in 1 2 3 4; do kline $SAXPY_KS 100000; done
  site saxpy_kernel saxpy/saxpy.cu:23 4 0 0 0 0
  site gelu_forward_kernel gelu/gelu.cu:28 0 0 0 2 0
else
  for i in 1 2 3 4; do kline $SAXPY 200000; done
  [ "$kind" = verify-off ] && site saxpy_kernel saxpy/saxpy.cu:23 0 4 0 0 0
  [ "$kind" = verify-off ] && site gelu_forward_kernel gelu/gelu.cu:28 0 2 0 0 0
fi
kline $GELU 200000; kline $GELU 200000 8192
kline $LIBRARY 133333
echo '{"type":"end","kernels":1,"time_ns":2}' >>"$KERNELSMITH_PROFILE_OUT"
if [ "$kind" = capture ]; then
  case ",$KERNELSMITH_CAPTURE," in *,$SAXPY,*) cp "$(dirname "$0")/saxpy.kscap" "$KERNELSMITH_CAPTURE_OUT" ;; esac
  echo "capture asked: $KERNELSMITH_CAPTURE launches=$KERNELSMITH_CAPTURE_LAUNCHES limit=$KERNELSMITH_CAPTURE_LIMIT" >>"$TUNE_LOG"
fi
exit 0
EOF

# A project: the two apps and their shared header, committed.
newrepo() {
  rm -rf "$1"
  mkdir -p "$1"
  cp -r "$data/apps/saxpy" "$data/apps/gelu" "$data/apps/common" "$1/"
  (cd "$1" && git init -q . && git add -A && git -c user.email=t@t -c user.name=t commit -qm init)
}
