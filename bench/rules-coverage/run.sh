#!/usr/bin/env bash
# Rules coverage (bench/README.md): every rewrite rule on every kernel of
# testdata and of the public code bases under KS_COVERAGE_EXT (default
# .ext/), each variant compiled with NVRTC; a table per rule and per code
# base, and bench/results/rules-coverage-<label>-<date>.json and .md.
#   bench/rules-coverage/run.sh [coverage.py options]     # CPU part
#   bench/rules-coverage/run.sh --gpu [gpu.py options]     # GPU part (exits 77 without a GPU)
# KS_BIN: the binary (default build/cli/kernelsmith-cc; with --gpu, the
# bundle's /tmp/ks-bundle/bin/kernelsmith-cc when .bundle/ks-bundle.tar.xz is
# unpacked there). KS_COVERAGE_SETS, KS_COVERAGE_JOBS, KS_LABEL, KS_RESULTS.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ "${1:-}" = --gpu ]; then
  shift
  exec python3 bench/rules-coverage/gpu.py "$@"
fi
exec python3 bench/rules-coverage/coverage.py "$@"
