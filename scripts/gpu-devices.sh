#!/usr/bin/env bash
# bench/devices (one worker, two on one GPU, two GPUs where there are two,
# and the same with `mpirun -np 2 ... optimize --mpi`) on a machine with an
# NVIDIA GPU, from the bundle made by scripts/device-bundle.sh. The
# machine's own Open MPI launches the ranks, so the bundle's copies of the
# MPI libraries are set aside: mpirun and the library the ranks load must
# be of one installation (Open MPI 4.1 keeps one ABI). Writes to $OUT (or
# ./gpu-devices-out). KS_MAX_EVALS, KS_SEED, KS_OPT_ARGS as bench/devices.
set -u
cd "$(dirname "$0")/.."
dest=${OUT:-gpu-devices-out}
mkdir -p "$dest"
ks=/tmp/ks-bundle
rm -rf $ks && mkdir -p $ks && tar -C $ks -xJf .bundle/ks-bundle.tar.xz ||
  { echo "no bundle: run scripts/device-bundle.sh first"; exit 1; }
if command -v mpirun >/dev/null; then
  rm -f $ks/lib/libmpi* $ks/lib/libopen-rte* $ks/lib/libopen-pal* $ks/lib/libpmix* \
    $ks/lib/libhwloc* $ks/lib/libevent*
fi
export LD_LIBRARY_PATH=$ks/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KERNELSMITH_CLANG_RESOURCE_DIR=$ks/clang
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
export OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$dest/gpu.txt" 2>&1
mpirun --version 2>&1 | head -1 >>"$dest/gpu.txt"
KS_BIN=$ks/bin/kernelsmith-cc KS_RESULTS="$dest" KS_KEEP_STORES="$dest/stores" \
  KS_MPIRUN="$(command -v mpirun || true)" bench/devices/run.sh 2>&1 | tee "$dest/devices.txt"
rm -rf "$dest"/stores/*/cache
tar -C "$dest" -czf "$dest/stores.tgz" stores && rm -rf "$dest/stores"
