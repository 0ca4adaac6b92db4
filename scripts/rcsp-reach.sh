#!/usr/bin/env bash
# How far the graph oracle (oracle/partition_rcsp.h) certifies within its default limits (10 s, 6M labels, which
# stay under 4 GiB): for each setting, n grows until an instance is not certified. Figures in docs/pooling.md,
# "The graph oracle". Usage: scripts/rcsp-reach.sh [build dir]   (needs KVAUDIT_BENCHMARKS=ON)
set -uo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build}/benchmarks/partition_rcsp_reach"
[[ -x "$bin" ]] || { echo "build $bin first: cmake --build ${1:-build} --target partition_rcsp_reach" >&2; exit 2; }
# setting: M R ROW START STEP
settings=(
  "free inf arbitrary 10 1"   # no pruning, nearly all entropies distinct: every composition of n is a label
  "free inf ties 10 1"        # zeros and equal masses: exact ties dominate
  "free 1.0 attention 16 8"   # a budget that prunes, on an attention-like row
  "half inf arbitrary 10 1"   # m = n / 2, no pruning: the largest binomial
  "3 inf arbitrary 64 64"
  "4 inf attention 32 32"
)
for s in "${settings[@]}"; do
  read -r m R row n step <<<"$s"
  while :; do
    mm=$m; [[ $m == half ]] && mm=$((n / 2))
    out=$(/usr/bin/time -f "wall=%es cpu=%Us maxrss=%MkB" "$bin" "$n" "$mm" "$R" "$row" 2>&1); rc=$?
    echo "${out//$'\n'/ }"
    [[ $rc -eq 0 ]] || break
    n=$((n + step))
    (( n > 4096 )) && break
  done
done
