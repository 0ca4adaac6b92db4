#!/usr/bin/env bash
# Long libFuzzer campaigns over every harness in fuzz/ (docs/hardening.md, "Fuzzing").
#
#   scripts/fuzz-campaign.sh [-s SECONDS] [-j JOBS] [-b BUILD_DIR] [-m] [HARNESS...]
#
#   -s SECONDS   wall time per harness (default 180)
#   -j JOBS      parallel fuzzing processes per harness (libFuzzer -jobs/-workers; default 1)
#   -b DIR       fuzz build dir (default build-fuzz), configured as scripts/test.sh stage 2 configures build-asan
#                (scripts/configure-sanitized.sh: ASan + UBSan, -O1), also when it exists with other flags
#   -m           afterwards, minimize each grown corpus into fuzz/corpus/<harness> (-merge=1): only inputs
#                that add coverage are added; without -m the repo is never written
#   HARNESS      names like npy_fuzz (default: every fuzz/*_fuzz.cpp)
#
# The working corpus of each harness persists in DIR/campaign/<harness>/corpus (seeded from fuzz/corpus), so
# successive campaigns resume; crashes, timeouts and OOMs land in DIR/campaign/<harness>/artifacts. The script
# prints one summary line per harness (executions, exec/s, corpus size, findings) and exits 1 if any harness
# produced an artifact.
set -euo pipefail
cd "$(dirname "$0")/.."
source fuzz/libfuzzer_flags.sh

seconds=180 jobs=1 build=build-fuzz merge=0
while getopts "s:j:b:m" opt; do
  case $opt in
    s) seconds=$OPTARG ;;
    j) jobs=$OPTARG ;;
    b) build=$OPTARG ;;
    m) merge=1 ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

harnesses=("$@")
if [[ ${#harnesses[@]} -eq 0 ]]; then
  for f in fuzz/*_fuzz.cpp; do harnesses+=("$(basename "$f" .cpp)"); done
fi

# Every campaign measures the build the test suite's fuzz stage runs (an unoptimized one ran several times slower).
scripts/configure-sanitized.sh "$build" >/dev/null
cmake --build "$build" --target "${harnesses[@]}" -j "$(nproc)"

status=0
total_execs=0
printf '%-24s %12s %9s %8s %s\n' harness executions exec/s corpus findings
for h in "${harnesses[@]}"; do
  work=$build/campaign/$h
  mkdir -p "$work/corpus" "$work/artifacts"
  [[ -d fuzz/corpus/$h ]] && cp -rn "fuzz/corpus/$h/." "$work/corpus/" 2>/dev/null || true
  dict=fuzz/dict/${h%_fuzz}.dict
  args=(-max_total_time="$seconds" "${libfuzzer_flags[@]}" -artifact_prefix="$work/artifacts/")
  [[ -f $dict ]] && args+=(-dict="$dict")
  log=$work/last.log
  if [[ $jobs -gt 1 ]]; then args+=(-jobs="$jobs" -workers="$jobs"); fi
  set +e
  "$build/fuzz/$h" "$work/corpus" "${args[@]}" >"$log" 2>&1
  rc=$?
  set -e
  # With -jobs each job logs to fuzz-<n>.log in the working directory, and libFuzzer copies that log into its own
  # output when the job exits, so $log already holds every job's stats (appending the files counted them twice).
  if [[ $jobs -gt 1 ]]; then rm -f fuzz-*.log; fi
  execs=$(grep -h 'stat::number_of_executed_units' "$log" | awk '{s += $2} END {print s + 0}')
  rate=$(grep -h 'stat::average_exec_per_sec' "$log" | awk '{s += $2} END {print s + 0}')
  findings=$(find "$work/artifacts" -type f | wc -l)
  corpus=$(find "$work/corpus" -type f | wc -l)
  total_execs=$((total_execs + execs))
  printf '%-24s %12d %9d %8d %s\n' "$h" "$execs" "$rate" "$corpus" "$findings"
  if [[ $rc -ne 0 || $findings -ne 0 ]]; then
    status=1
    echo "  $h: exit $rc, artifacts in $work/artifacts, log $log" >&2
  fi
  if [[ $merge -eq 1 ]]; then
    mkdir -p "fuzz/corpus/$h"
    "$build/fuzz/$h" -merge=1 "fuzz/corpus/$h" "$work/corpus" >"$work/merge.log" 2>&1 || status=1
  fi
done
echo "total executions: $total_execs"
exit $status
