#!/usr/bin/env bash
# One command from a fresh Debian 12 machine with the CUDA toolkit: install
# what is missing, build, and run kernelsmith-cc's main job on the test apps:
# `optimize` scans, slices and compiles every kernel, and on a machine with an
# NVIDIA GPU searches for faster variants of each (results in .kernelsmith/).
# Without a GPU it stops after compiling and says so. The search stops a
# kernel after 8 rounds without a faster variant and is capped at 15 minutes
# of wall time; pass --max-seconds
# or --patience to change that, --resume later to continue. Then
# `kernelsmith-cc apply` prints the winners as a patch.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh release
exec build/cli/kernelsmith-cc optimize --patience 8 --max-seconds 900 testdata/apps "$@"
