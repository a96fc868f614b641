#!/usr/bin/env bash
# One command: install what is missing, build with sanitizers, run every test.
# Tests labelled GPU skip (exit 77) where there is no NVIDIA driver.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test
cd build-test
ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" "$@"
