#!/usr/bin/env bash
# optimize's benchmark on a machine with an NVIDIA GPU, from the bundle made
# by scripts/device-bundle.sh: unpacks it, runs bench/optimize/run.sh
# (budgets from KS_ROUNDS, KS_RULES_SECONDS, KS_TUNING_SECONDS, KS_OPT_ARGS)
# then bench/apply/run.sh on the rules run's store (unless KS_SKIP_APPLY=1),
# and leaves the tables and the JSON in $OUT (or ./gpu-optimize-out), the
# stores (less their compile caches) packed in stores.tgz.
set -u
cd "$(dirname "$0")/.."
dest=${OUT:-gpu-optimize-out}
mkdir -p "$dest"
ks=/tmp/ks-bundle
rm -rf $ks && mkdir -p $ks && tar -C $ks -xJf .bundle/ks-bundle.tar.xz || { echo "no bundle: run scripts/device-bundle.sh first"; exit 1; }
export LD_LIBRARY_PATH=$ks/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KERNELSMITH_CLANG_RESOURCE_DIR=$ks/clang
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >"$dest/gpu.txt" 2>&1
KS_BIN=$ks/bin/kernelsmith-cc KS_RESULTS="$dest" KS_KEEP_STORES="$dest/stores" bench/optimize/run.sh 2>&1 | tee "$dest/optimize.txt"
# apply's evidence from the rules run's store: the apps patched, built, run.
if [ "${KS_SKIP_APPLY:-0}" != 1 ]; then
  KS_BIN=$ks/bin/kernelsmith-cc KS_RESULTS="$dest" bench/apply/run.sh "$dest/stores/rules" 2>&1 | tee "$dest/apply.txt"
fi
rm -rf "$dest"/stores/*/cache
tar -C "$dest" -czf "$dest/stores.tgz" stores && rm -rf "$dest/stores"
