#!/usr/bin/env bash
# The README's test command. Sets up and builds, then runs every configuration the project claims:
#   1. build/       unit, property, proof and gpu tests (gpu tests report SKIPPED without a device)
#   2. build-asan/  one clang build with AddressSanitizer + UndefinedBehaviorSanitizer and libFuzzer's coverage
#                   instrumentation: the unit and property suites under the sanitizers, then each libFuzzer
#                   harness for a bounded time (CTest label fuzz)
#   3. python/      the `kvaudit` Python package built in a fresh venv, its pytest suite (against build/kvaudit)
# Stage 1 and 3 include the kvpress suites (conform_kvpress_test, python/tests/test_kvpress_inprocess.py): the pinned
# kvpress venv is created here (scripts/kvenv.sh; reused when its requirements stamp matches), in the background
# while stage 1 compiles, and KVAUDIT_REQUIRE_KVENV=1 makes those suites fail rather than skip without it.
# After each ctest run, tests/meta/check_skip_reporting.py fails if a test printed "[  SKIPPED ]" and was Passed.
# Usage: scripts/test.sh [--fast]   (--fast: stage 1 only, for a quick local loop)
# Env: KVAUDIT_KVENV (the kvpress venv, default /opt/kvenv)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
stage() { printf '\n==== %s ====\n' "$*"; }
export KVAUDIT_KVENV=${KVAUDIT_KVENV:-/opt/kvenv} KVAUDIT_REQUIRE_KVENV=1
# ctest keeps only 1 KiB of a passed test's output by default: the skip check reads all of it.
ctest_run() {  # ctest_run BUILD_DIR JUNIT_NAME [ctest args...]
  local dir=$1 junit="$PWD/$1/$2.xml"; shift 2
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" --output-junit "$junit" --test-output-size-passed 100000000 "$@"
  python3 tests/meta/check_skip_reporting.py junit "$junit"
}

stage "1/3 build and run unit, property, proof, gpu tests (and the kvpress venv)"
kvenv_log=$(mktemp)
t_kvenv=$SECONDS
scripts/kvenv.sh >"$kvenv_log" 2>&1 &
kvenv_pid=$!
scripts/setup.sh
if ! wait "$kvenv_pid"; then cat "$kvenv_log" >&2; echo "test.sh: the kvpress venv could not be created" >&2; exit 1; fi
grep '^kvenv:' "$kvenv_log" || true
echo "test.sh: kvpress venv ready $((SECONDS - t_kvenv)) s after the start (beside the build)"
ctest_run build ctest-stage1 --timeout 900
[[ "${1:-}" == "--fast" ]] && exit 0

stage "2/3 clang ASan + UBSan build: the suites under the sanitizers, then the libFuzzer harnesses"
# One tree for both: the fuzz build already compiles the libraries with ASan + UBSan (and coverage counters, which
# the tests' sanitizer runtime provides), so building the suites there saves compiling the libraries twice. Its
# flags, and why: scripts/configure-sanitized.sh.
scripts/configure-sanitized.sh build-asan >/dev/null
# What this stage runs: the suites, the CLI they drive, the harnesses. The proofs' checks run in stage 1 only
# (their library code is the suites' code; 7 CPU-minutes here). So does the CPU build of the GPU algorithm: clang's
# UBSan stops in Thrust's own headers (thrust/detail/reference.h:330, an upcast of a null tag pointer in its
# dispatch idiom), which gcc's UBSan, used here before, did not check.
cmake --build build-asan -j "$jobs" --target tests/all cli/all fuzz/all
# The conform suites drive Python implementations through pipes; the C++ side they exercise is covered by
# conform_protocol_test, so the two slow Python-bound suites run in stage 1 only.
# The sanitizers check the same code paths on every model but sample the dumps (KVAUDIT_SAMPLE_DUMPS: layers 0,
# L/2 and L-1 of recorded selections, the report tests on the SmolLM2 files); stage 1 checks every layer of every
# prompt.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 KVAUDIT_SAMPLE_DUMPS=1 \
  ctest_run build-asan ctest-stage2 --timeout 1200 -LE "gpu|fuzz|proof" \
        -E "conform_mutants_test|conform_kvpress_test|gpu_cpu_build_test|gpu_cpu_dumps_test"
ctest_run build-asan ctest-stage2-fuzz -L fuzz --timeout 300

stage "3/3 Python package: fresh venv, pip install ./python, pytest (python/ci.sh)"
python/ci.sh
