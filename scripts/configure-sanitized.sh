#!/usr/bin/env bash
# Configures the sanitized fuzz build, the one definition of its flags (scripts/test.sh stage 2 builds build-asan with
# it, scripts/fuzz-campaign.sh its campaign dir): clang, ASan + UBSan, the libFuzzer harnesses (-DKVAUDIT_FUZZ=ON; the
# libraries get libFuzzer's coverage instrumentation), no CUDA, no benchmarks. clang's -fsanitize=undefined also
# checks float-cast-overflow, which gcc's does not. -O1 with line tables (ASan's own advice): reports keep file:line,
# and the build is several times faster than -O2 -g, whose variable tracking under the sanitizers dominated the
# build (audit/pooling_section.cpp: 160 s with gcc -O2 -g, 30 s here); without a build type the harnesses would run
# unoptimized, several times slower.
# Usage: scripts/configure-sanitized.sh BUILD_DIR   (re-running it on a configured dir applies these flags)
set -euo pipefail
cd "$(dirname "$0")/.."
CC=clang CXX=clang++ cmake -S . -B "${1:?usage: scripts/configure-sanitized.sh BUILD_DIR}" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
  -DKVAUDIT_SANITIZE=ON -DKVAUDIT_FUZZ=ON -DKVAUDIT_CUDA=OFF -DKVAUDIT_BENCHMARKS=OFF
