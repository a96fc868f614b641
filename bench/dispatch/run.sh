#!/usr/bin/env bash
# The fast path of a patched launch site (runtime/kernelsmith_dispatch.h)
# against a direct launch, and the cost of a disjoint() guard (lengths known;
# lengths unknown through ksrt::alias_cache; unknown and uncached): builds
# bench/dispatch/dispatch_bench.cu with nvcc, prints ns per launch for each
# series and writes them to bench/results/dispatch-<device>-<date>.json
# (direct_ns, dispatch_ns, disjoint_known_ns, disjoint_cached_ns,
# disjoint_driver_ns, their overheads, and whether each took the variant).
# Needs an NVIDIA GPU (exit 77 without one).   KS_RESULTS (default bench/results)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${KS_RESULTS:-bench/results}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
"$nvcc" -O2 -std=c++17 -Iruntime bench/dispatch/dispatch_bench.cu -o "$tmp/dispatch_bench"
"$tmp/dispatch_bench" 20000 "$tmp/dispatch.json"
dev=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["device"])' "$tmp/dispatch.json")
label=$(echo "$dev" | sed 's/NVIDIA //; s/ /-/g' | tr 'A-Z' 'a-z')
mkdir -p "$out"
cp "$tmp/dispatch.json" "$out/dispatch-$label-$(date +%F).json"
echo "wrote $out/dispatch-$label-$(date +%F).json"
