#!/usr/bin/env bash
# Regenerates the needle study's records for both stand-in models, one after the other (one torch thread each:
# see docs/needle-study.md). Usage: tools/needle_study/run_study.sh [DEADLINE_0.5B DEADLINE_1.5B]  (UTC HH:MM;
# without them the planned haystack counts run to the end: about 3 and 9 CPU-hours on one free core).
# Needs /opt/kvenv (tools/export/requirements.txt), the joined GGUF files in ~/.cache/kvaudit-gguf (docs/dump-format.md)
# and the kvaudit package importable by /opt/kvenv/bin/python (docs/needle-study.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${KVENV_PYTHON:-/opt/kvenv/bin/python}
gguf=${KVAUDIT_GGUF_DIR:-$HOME/.cache/kvaudit-gguf}
d05=${1:+--deadline $1}
d15=${2:+--deadline $2}
$py tools/needle_study/needle_study.py --gguf "$gguf/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf" \
    --model-id Qwen/Qwen2.5-Coder-0.5B-Instruct --out data/qwen2.5-coder-0.5b-instruct/needle_study \
    --haystacks 60 $d05
$py tools/needle_study/needle_study.py --gguf "$gguf/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" \
    --model-id Qwen/Qwen2.5-Coder-1.5B-Instruct --out data/qwen2.5-coder-1.5b-instruct/needle_study \
    --haystacks 24 $d15
