#!/usr/bin/env bash
# One command from a fresh Debian 12 machine with the CUDA toolkit: install
# what is missing, build, and run kernelsmith-cc's main job on the test apps:
# `optimize` scans, slices and compiles every kernel, and on a machine with an
# NVIDIA GPU searches for faster variants of each (results in .kernelsmith/).
# Without a GPU it stops after compiling and says so. The search is capped at
# 15 minutes of wall time here (a full 40-round search of all 14 kernels takes
# hours); pass --max-seconds to change it, --resume later to continue.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh release
exec build/cli/kernelsmith-cc optimize --max-seconds 900 testdata/apps "$@"
