#!/usr/bin/env bash
# The README's test command: set up, build, run every CTest label that runs without a GPU
# (gpu tests run too and report SKIPPED when no device is present).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900
