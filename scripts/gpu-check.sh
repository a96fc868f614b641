#!/usr/bin/env bash
# The whole GPU check in one run, on a machine with an NVIDIA GPU and the CUDA
# toolkit: unpacks the bundle from scripts/device-bundle.sh, runs doctor, the
# GPU tests and the unit tests, scans the test apps, builds and runs every test
# app, and prints a short table. The table and an archive of every log go to
# $OUT (or ./gpu-check-out).
set -u
cd "$(dirname "$0")/.."
dest=${OUT:-gpu-check-out}
mkdir -p "$dest"
out=$(mktemp -d)
ks=/tmp/ks-bundle
rm -rf $ks && mkdir -p $ks && tar -C $ks -xJf .bundle/ks-bundle.tar.xz || { echo "no bundle: run scripts/device-bundle.sh first"; exit 1; }
export LD_LIBRARY_PATH=$ks/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KERNELSMITH_CLANG_RESOURCE_DIR=$ks/clang
export KS_TESTDATA=$PWD/testdata
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
results=()
record() { results+=("$(printf '%-28s %s' "$1" "$2")"); }
step() { # name, command...
  local name=$1; shift
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  case $rc in 0) record "$name" PASS;; 77) record "$name" SKIP;; *) record "$name" "FAIL (rc=$rc)";; esac
  return $rc
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >"$out/gpu.txt" 2>&1
step doctor $ks/bin/kernelsmith-cc doctor
$ks/bin/kernelsmith-cc doctor --json >"$out/doctor.json" 2>/dev/null
step gpu_driver $ks/bin/test_gpu_driver
step worker_gpu $ks/bin/test_worker_gpu   # finds kernelsmith-worker beside itself
step capture_ref_gpu $ks/bin/test_capture_ref_gpu
step wire $ks/bin/test_wire
step backend $ks/bin/test_backend
step support $ks/bin/test_support
step flags $ks/bin/test_flags
step scan_tests $ks/bin/test_scan
step compile_tests $ks/bin/test_compile
step expr_tests $ks/bin/test_expr
step spec_tests $ks/bin/test_spec
[ -x $ks/bin/test_slice ] && step slice_tests $ks/bin/test_slice
[ -x $ks/bin/test_kast ] && step kast_tests $ks/bin/test_kast
[ -x $ks/bin/test_store ] && step store_tests $ks/bin/test_store
[ -x $ks/bin/test_search ] && step search_tests $ks/bin/test_search
[ -x $ks/bin/test_runtime_header ] && step runtime_header $ks/bin/test_runtime_header
step hacks tests/hacks.sh $ks/bin/kernelsmith-cc testdata tests/fixtures
step tile_mma_gpu tests/tile_mma_gpu.sh $ks/bin/kernelsmith-cc testdata
step judge_bench env KS_BIN=$ks/bin/kernelsmith-cc KS_COMPILE_BENCH=$ks/bin/compile_bench \
  KS_RESULTS="$out" bench/judge/run.sh
step dispatch_bench env KS_RESULTS="$out" bench/dispatch/run.sh
step scan_apps $ks/bin/kernelsmith-cc scan --long testdata/apps
step build_apps make -C testdata/apps -j"$(nproc)"
step inject_gpu tests/inject_gpu.sh $ks/lib/kernelsmith/libkernelsmith_inject.so testdata/apps/saxpy/saxpy

apps=(saxpy gelu reduce_sum softmax layernorm transpose sgemm stencil2d histogram prefix_sum spmv_csr gemv)
: >"$out/apps.txt"
for app in "${apps[@]}"; do
  if [ -x testdata/apps/$app/$app ]; then
    (cd testdata/apps/$app && ./$app) >"$out/app-$app.log" 2>&1
    rc=$?
    grep "^$app:" "$out/app-$app.log" >>"$out/apps.txt"
    if [ $rc -eq 0 ] && grep -q "^$app: PASS" "$out/app-$app.log"; then
      record "app $app" "PASS $(sed -n "s/^$app: kernel \(.*\)$/\1/p" "$out/app-$app.log" | head -1)"
    else
      record "app $app" "FAIL (rc=$rc)"
    fi
  else
    record "app $app" "NOT BUILT"
  fi
done
make -C testdata/apps clean >/dev/null 2>&1

# The apps' own PASS lines and kernel times, as JSON for bench/results/.
python3 - "$out/apps.txt" "$out/gpu.txt" >"$out/apps.json" <<'PY'
import datetime, json, re, sys
lines = open(sys.argv[1]).read().splitlines()
gpu = open(sys.argv[2]).read().strip().split(", ")
apps = {}
for line in lines:
    m = re.match(r"^(\w+): (PASS|FAIL)", line)
    if m:
        apps.setdefault(m.group(1), {})["status"] = m.group(2)
    m = re.match(r"^(\w+): kernel (\S+) ([0-9.]+) ms", line)
    if m:
        apps.setdefault(m.group(1), {}).update(kernel=m.group(2), median_ms=float(m.group(3)))
print(json.dumps({"benchmark": "testdata apps, baseline (naive) kernels",
                  "device": gpu[0], "driver": gpu[1] if len(gpu) > 1 else None,
                  "date": datetime.date.today().isoformat(),
                  "command": "scripts/gpu-check.sh (each app: its own CPU check, then 20 "
                             "timed launches with an L2 flush before each, median)",
                  "apps": apps}, indent=2))
PY

echo
echo "GPU: $(cat "$out/gpu.txt")"
printf '%s\n' "${results[@]}" | tee "$out/summary.txt"
echo; tail -22 "$out/hacks.log" 2>/dev/null; echo; tail -8 "$out/judge_bench.log" 2>/dev/null
# One archive, so that every log comes back from a machine that returns few files.
tar -C "$out" -czf "$dest/logs.tgz" .
cp "$out/summary.txt" "$out/apps.txt" "$out/apps.json" "$out/doctor.json" "$dest/"
cp "$out"/judge-*.json "$dest/" 2>/dev/null
! grep -q "FAIL\|NOT BUILT" "$out/summary.txt"
