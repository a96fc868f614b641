#!/usr/bin/env bash
# lookup_table on testdata/rules/lut.cu: the kernels it applies to (a byte
# image's window filter in the older style, a grid-stride gamma correction, a
# signed char sequence; wider integers; floats and doubles whose spec says
# they hold integers), compiled with NVRTC for sm_90 as the judge compiles
# them (rewrite --compile); the refusals with their reasons; and the children
# run on the CPU (emulated blocks, tests/tile_mm_cpu/emu.h) against the
# originals, bit for bit, floats such as -0.0, NaN and 0.5 included.
#
# usage: lookup_table.sh KERNELSMITH_CC TESTDATA
set -u
bin=$(realpath "$1") data=$(realpath "$2") here=$(dirname "$(realpath "$0")")
file=$data/rules/lut.cu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
for k in log_energy gamma_correct window_softscore; do
  "$bin" -q rewrite --no-compdb --compile $k --rule lookup_table "$file" >"$work/$k.cu" 2>"$work/err" ||
    { echo "lookup_table: $k:"; cat "$work/err"; fail=1; continue; }
  grep -qx "// kernelsmith-cc techniques: lookup_table=256" "$work/$k.cu" || { echo "lookup_table: $k: no tag"; fail=1; }
  grep -q "__shared__ float ks_lut\[256\];" "$work/$k.cu" || { echo "lookup_table: $k: no table"; fail=1; }
  grep -q "__syncthreads();" "$work/$k.cu" || { echo "lookup_table: $k: no barrier after the fill"; fail=1; }
  grep -q "ks_lut\[(unsigned char)(" "$work/$k.cu" || { echo "lookup_table: $k: no lookup"; fail=1; }
done
# wider integers: looked up in [0, 256), the rest computed as written; a
# count read through a local (float p = count[k] / 25.0f) kept beside it
for k in window_hist_entropy decay_weights; do
  "$bin" -q rewrite --no-compdb --compile $k --rule lookup_table=256 "$file" >"$work/$k.cu" 2>"$work/err" ||
    { echo "lookup_table: $k:"; cat "$work/err"; fail=1; continue; }
  grep -qx "// kernelsmith-cc techniques: lookup_table=256" "$work/$k.cu" || { echo "lookup_table: $k: no tag"; fail=1; }
  grep -q "< 256 ? ks_lut\[" "$work/$k.cu" || { echo "lookup_table: $k: no range test before the lookup"; fail=1; }
done
grep -q "const int ks_key = count\[k\];" "$work/window_hist_entropy.cu" ||
  { echo "lookup_table: window_hist_entropy: the count is not kept beside p"; fail=1; }
grep -q "ks_lut\[ks_t\] = ((float)(ks_b / 25.0f)) \* log2f(((float)(ks_b / 25.0f)));" "$work/window_hist_entropy.cu" ||
  { echo "lookup_table: window_hist_entropy: the entry is not p * log2f(p) of the count"; fail=1; }
"$bin" -q rewrite --no-compdb --compile decay_weights --rule lookup_table=4096 "$file" >/dev/null 2>&1 ||
  { echo "lookup_table: decay_weights: the 4096-entry table does not compile"; fail=1; }
# floats and doubles holding integers (int(0, 255), int(0, 1023), int(0,
# 1000) in their specs): the first choice that covers them, the entries made
# from the float value, the lookup guarded (the sign bit and the range before
# the conversion to int, then integrality), a local's value kept beside it
float_kernel() { # kernel tag table
  "$bin" -q rewrite --no-compdb --compile $1 --rule lookup_table "$file" >"$work/$1.cu" 2>"$work/err" ||
    { echo "lookup_table: $1:"; cat "$work/err"; fail=1; return; }
  grep -qx "// kernelsmith-cc techniques: lookup_table=$2" "$work/$1.cu" || { echo "lookup_table: $1: no tag =$2"; fail=1; }
  grep -qF "$3" "$work/$1.cu" || { echo "lookup_table: $1: no table '$3'"; fail=1; }
}
float_kernel log_energy_f32 256 "__shared__ float ks_lut[256];"
float_kernel gamma_raw10 1024 "__shared__ float ks_lut[1024];"
float_kernel anscombe_frames 1024 "__shared__ double ks_lut[1024];"
grep -qF "const float ks_b = (float)ks_t;" "$work/log_energy_f32.cu" ||
  { echo "lookup_table: log_energy_f32: the entries are not made from the float value"; fail=1; }
grep -qF "acc += (!signbit(src[yy * w + xx]) && src[yy * w + xx] < 256.0f && (float)(int)src[yy * w + xx] == src[yy * w + xx] ? ks_lut[(int)src[yy * w + xx]] : (log1pf(src[yy * w + xx])));" "$work/log_energy_f32.cu" ||
  { echo "lookup_table: log_energy_f32: not the guarded lookup"; fail=1; }
grep -qF "(!signbit(raw[i]) && raw[i] < 1024.0f && (float)(int)raw[i] == raw[i] ? ks_lut[(int)raw[i]] : (powf(raw[i] / white, inv_gamma)))" "$work/gamma_raw10.cu" ||
  { echo "lookup_table: gamma_raw10: not the guarded lookup"; fail=1; }
grep -qF "const double ks_key = counts[(size_t)f * npix + p];" "$work/anscombe_frames.cu" ||
  { echo "lookup_table: anscombe_frames: the count is not kept beside c"; fail=1; }
grep -qF "(!signbit(ks_key) && ks_key < 1024.0 && (double)(int)ks_key == ks_key ? ks_lut[(int)ks_key] : (2.0 * sqrt(c + 0.375)))" "$work/anscombe_frames.cu" ||
  { echo "lookup_table: anscombe_frames: not the guarded lookup"; fail=1; }
"$bin" -q rewrite --no-compdb --compile gamma_raw10 --rule lookup_table=4096 "$file" >/dev/null 2>&1 ||
  { echo "lookup_table: gamma_raw10: the 4096-entry table does not compile"; fail=1; }
# golden rewrites (KS_UPDATE_GOLDEN=1 writes them)
gold=$data/rules/expected-lut
for k in log_energy gamma_correct window_softscore window_hist_entropy decay_weights \
         log_energy_f32 gamma_raw10 anscombe_frames; do
  if [ "${KS_UPDATE_GOLDEN:-0}" = 1 ]; then
    mkdir -p "$gold" && cp "$work/$k.cu" "$gold/$k.lookup_table.cu.txt"
  elif ! diff -u "$gold/$k.lookup_table.cu.txt" "$work/$k.cu"; then
    echo "lookup_table: $k differs from its golden rewrite"; fail=1
  fi
done
refuse_choice() { # kernel=choice reason
  if "$bin" -q rewrite --no-compdb ${1%%=*} --rule lookup_table=${1#*=} "$file" >/dev/null 2>"$work/err"; then
    echo "lookup_table: $1 was rewritten"; fail=1
  elif ! grep -qF "$2" "$work/err"; then
    echo "lookup_table: $1: expected '$2', got:"; cat "$work/err"; fail=1
  fi
}
refuse_choice log_energy=1024 "its tables are of 8-bit values, 256 entries each"
refuse_choice gamma_raw10=256 "'raw[i]' holds integers up to 1023 (the spec or capture says), past a table of 256 entries (lookup_table=1024 covers them)"
refuse_choice anscombe_frames=4096 "its 1 tables would take 32768 bytes of shared memory"
grep -q "const signed char ks_b = (signed char)ks_t;" "$work/window_softscore.cu" ||
  { echo "lookup_table: window_softscore: the entries are not made from signed chars"; fail=1; }
refuse() { # kernel reason
  if "$bin" -q rewrite --no-compdb $1 --rule lookup_table "$file" >/dev/null 2>"$work/err"; then
    echo "lookup_table: $1 was rewritten"; fail=1
  elif ! grep -qF "$2" "$work/err"; then
    echo "lookup_table: $1: expected '$2', got:"; cat "$work/err"; fail=1
  fi
}
refuse log_floats "no table: logf(x[i + j]) reads 'x[i + j]', a float the spec or capture does not show to hold small integers"
refuse log_depth16 "no table: log2f(1.0f + depth[i + j]) reads 'depth[i + j]', a float whose integers (0 to 65535, the spec or capture says) lie outside the largest table's [0, 4096)"
refuse log_per_thread "it depends on two values ('b[i+j]' and 'i')"
refuse log_once "no math function is called inside a loop"

# From a capture instead of a spec: a kernel with no spec over a float
# image, its launch captured (docs/capture-format.md, written here as
# profile --capture writes it). Pixels that are all integers in 0..255 make
# the table (256 entries); one pixel of 0.5 leaves none, and says why.
cat >"$work/cap.cu" <<'CU'
__global__ void float_log_sum(const float *img, float *out, int n, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float s = 0.0f;
  for (int j = 0; j < k; ++j) s += logf(1.0f + img[i + j]);
  out[i] = s;
}
CU
capture() { # file, the last pixel's value
  python3 - "$1" "$2" <<'PY'
import json, struct, sys, zlib
def rec(t, payload):
    return struct.pack("<IIQ", t, 0, len(payload)) + payload + struct.pack("<I", zlib.crc32(payload))
n, k = 4096, 8
img = [float((i * 37) % 256) for i in range(n + k)]
img[-1] = float(sys.argv[2])
x = struct.pack("<%df" % (n + k), *img)
y = bytes(4 * n)
blobs = rec(2, struct.pack("<Q", 1) + x) + rec(2, struct.pack("<Q", 2) + y)
bx, by = 0x7F0000000000, 0x7F0000100000
def ptr(i, off, base, size, before):
    return {"index": i, "offset": off, "size": 8, "kind": "pointer",
            "value": struct.pack("<Q", base).hex(), "memory": "device", "base": hex(base),
            "alloc_size": size, "ptr_offset": 0, "before": before}
launch = {"kernel": "_Z13float_log_sumPKfPfii", "launch": 0, "grid": [16, 1, 1],
          "block": [256, 1, 1], "smem": 0, "stream": "0x0", "device": 0,
          "api": "cuLaunchKernel", "over_limit": False, "bytes_needed": len(x) + len(y),
          "bytes": len(x) + len(y),
          "params": [ptr(0, 0, bx, len(x), 1), ptr(1, 8, by, len(y), 2),
                     {"index": 2, "offset": 16, "size": 4, "kind": "scalar", "value": struct.pack("<i", n).hex()},
                     {"index": 3, "offset": 20, "size": 4, "kind": "scalar", "value": struct.pack("<i", k).hex()}],
          "blobs": [{"id": i + 1, "size": len(b), "crc32": zlib.crc32(b)} for i, b in enumerate([x, y])]}
open(sys.argv[1], "wb").write(b"KSCAP\0\1\0" + blobs + rec(1, json.dumps(launch).encode()) +
                              rec(3, struct.pack("<Q", 1)))
PY
}
capture "$work/ints.kscap" 255
capture "$work/half.kscap" 0.5
if "$bin" -q rewrite --no-compdb --compile float_log_sum --rule lookup_table --capture "$work/ints.kscap" \
     "$work/cap.cu" >"$work/cap_ints.cu" 2>"$work/err"; then
  grep -qF "__shared__ float ks_lut[256];" "$work/cap_ints.cu" &&
    grep -qF "(!signbit(img[i + j]) && img[i + j] < 256.0f" "$work/cap_ints.cu" ||
    { echo "lookup_table: float_log_sum from a capture of integers: no guarded table"; fail=1; }
else
  echo "lookup_table: float_log_sum from a capture of integers:"; cat "$work/err"; fail=1
fi
if "$bin" -q rewrite --no-compdb float_log_sum --rule lookup_table --capture "$work/half.kscap" \
     "$work/cap.cu" >/dev/null 2>"$work/err"; then
  echo "lookup_table: float_log_sum from a capture holding 0.5 was rewritten"; fail=1
elif ! grep -qF "a float the spec or capture does not show to hold small integers" "$work/err"; then
  echo "lookup_table: float_log_sum from a capture holding 0.5: expected the reason, got:"
  cat "$work/err"; fail=1
fi

cxx=${CXX:-g++}
printf '#include <barrier>\nint main() { std::barrier<> b(1); b.arrive_and_wait(); }\n' >"$work/probe.cpp"
if ! "$cxx" -std=c++20 -pthread "$work/probe.cpp" -o "$work/probe" 2>/dev/null; then
  echo "lookup_table: no C++20 compiler with <barrier> ($cxx); CPU runs skipped"
  exit $fail
fi
printf '#include "%s.cu"\n' log_energy gamma_correct window_softscore window_hist_entropy decay_weights \
  log_energy_f32 gamma_raw10 anscombe_frames >"$work/v.h"
"$cxx" -std=c++20 -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -w -pthread \
  -I"$here/tile_mm_cpu" -I"$work" -DVARIANTS="\"v.h\"" -DLUT_CU="\"$file\"" \
  "$here/lookup_table_cpu/check.cpp" -o "$work/check" || { echo "lookup_table: the CPU check does not build"; exit 1; }
"$work/check" || fail=1
exit $fail
