#!/usr/bin/env bash
# The whole user path on a machine with an NVIDIA GPU, from the bundle made by
# scripts/device-bundle.sh: unpacks it, runs the dispatch benchmark, the GPU
# tests of the runtime header and the worker, then bench/e2e/e2e.py (profile,
# capture, optimize, apply, rebuild, the program's own check, verify, the
# launcher) on the programs named by KS_E2E_SETS (legacy,apps,polybench) and
# KS_E2E_ONLY, with KS_E2E_SECONDS of search per hot kernel. PolyBench-ACC's
# sources (fetched, never committed) are found at KS_POLYBENCH.
# KS_E2E_TUNE=1 runs bench/tune/tune.py instead (--compare KS_TUNE_COMPARE).
# Everything it writes goes to $OUT (or ./gpu-e2e-out).
set -u
cd "$(dirname "$0")/.."
dest=${OUT:-gpu-e2e-out}
mkdir -p "$dest"
ks=/tmp/ks-bundle
rm -rf $ks && mkdir -p $ks && tar -C $ks -xJf .bundle/ks-bundle.tar.xz ||
  { echo "no bundle: run scripts/device-bundle.sh first"; exit 1; }
export LD_LIBRARY_PATH=$ks/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KERNELSMITH_CLANG_RESOURCE_DIR=$ks/clang
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu \
  --format=csv,noheader >"$dest/gpu.txt" 2>&1
logs=$(mktemp -d)
if [ "${KS_E2E_TESTS:-1}" = 1 ]; then
  for t in test_runtime_header test_worker_gpu test_capture_ref_gpu; do
    [ -x $ks/bin/$t ] || continue
    $ks/bin/$t >"$logs/$t.log" 2>&1
    echo "$t: rc $?" | tee -a "$dest/tests.txt"
  done
  tests/tile_mma_gpu.sh $ks/bin/kernelsmith-cc testdata >"$logs/tile_mma_gpu.log" 2>&1
  echo "tile_mma_gpu: rc $?" | tee -a "$dest/tests.txt"
  KS_RESULTS="$dest" bench/dispatch/run.sh 2>&1 | tee "$logs/dispatch.log"
fi
if [ "${KS_E2E_TUNE:-0}" = 1 ]; then
  # bench/tune instead: `tune` on the programs with their specs stripped,
  # compared with the step-by-step path's JSON KS_TUNE_COMPARE.
  KS_BIN=$ks/bin/kernelsmith-cc timeout "${KS_E2E_LIMIT:-3000}" python3 -u bench/tune/tune.py --results "$dest" \
    --work "$logs/e2e" --seconds "${KS_E2E_SECONDS:-20}" --sets "${KS_E2E_SETS:-apps}" \
    --only "${KS_E2E_ONLY:-}" ${KS_TUNE_COMPARE:+--compare "$KS_TUNE_COMPARE"} 2>&1 | tee "$logs/tune.txt"
else
KS_BIN=$ks/bin/kernelsmith-cc timeout "${KS_E2E_LIMIT:-3000}" python3 -u bench/e2e/e2e.py --results "$dest" --work "$logs/e2e" \
  --seconds "${KS_E2E_SECONDS:-20}" --sets "${KS_E2E_SETS:-legacy,polybench}" \
  --only "${KS_E2E_ONLY:-}" --polybench "${KS_POLYBENCH:-.ext/polybench}" 2>&1 | tee "$logs/e2e.txt"
fi
# The logs of every step, without the builds and captures, as one archive.
find "$logs" -type f \( -name '*.kscap' -o -name prog -o -name '*.o' \) -delete
find "$logs" -type d \( -name cache -o -name .git \) -prune -exec rm -rf {} + 2>/dev/null
tar -C "$logs" --exclude='*.db*' -czf "$dest/logs.tgz" .
(cd "$logs" && find . -name 'kernelsmith.db' -size -20M | tar -czf "$dest/stores.tgz" -T -)
