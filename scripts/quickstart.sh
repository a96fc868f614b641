#!/usr/bin/env bash
# One command from a fresh Debian 12 machine with the CUDA toolkit: install
# what is missing, build, and run kernelsmith-cc's main job on the test apps.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh release
exec build/cli/kernelsmith-cc scan testdata/apps "$@"
