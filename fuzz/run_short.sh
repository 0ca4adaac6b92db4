#!/usr/bin/env bash
# One bounded libFuzzer run for `ctest -L fuzz`: fuzz a scratch copy of the seed corpus so the repo's corpus
# is never written, keep artifacts (crash-*, timeout-*, oom-*) in the scratch dir, and fail on any finding.
# Usage: run_short.sh BINARY SEED_CORPUS SCRATCH_DIR SECONDS [libFuzzer flags...]
set -euo pipefail
bin=$1 seeds=$2 scratch=$3 seconds=$4
shift 4
rm -rf "$scratch/corpus"
mkdir -p "$scratch/corpus" "$scratch/artifacts"
if [[ -d $seeds ]]; then cp -r "$seeds/." "$scratch/corpus/"; fi
source "$(dirname "$0")/libfuzzer_flags.sh"
exec "$bin" "$scratch/corpus" -max_total_time="$seconds" "${libfuzzer_flags[@]}" -artifact_prefix="$scratch/artifacts/" "$@"
