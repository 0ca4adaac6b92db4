#!/usr/bin/env bash
# Creates (or reuses) the pinned kvpress environment the kvpress suites run in: a venv holding
# tools/export/requirements.txt (torch, transformers, kvpress, ...). Called by scripts/test.sh on every CI run.
#
# Reuse: the venv carries a stamp, .kvaudit-requirements.sha256, of the requirements file's hash and the Python
# version it was built for. A stamp that matches (and a venv that imports torch + kvpress) is reused untouched.
# Otherwise `pip install -r` brings the venv to the pins: a no-op in seconds when it already holds them (a venv
# installed by hand before stamps existed), about 2 minutes and 3.1 GB from nothing (PyPI's torch carries the
# CUDA wheels). A venv is never deleted here: a stale one is upgraded in place.
# Concurrent callers on one machine serialize on a lock next to the venv.
#
# Usage: scripts/kvenv.sh              Env: KVAUDIT_KVENV (the venv's path, default /opt/kvenv)
# Prints the venv's python on its last line of stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${KVAUDIT_KVENV:-/opt/kvenv}
requirements=tools/export/requirements.txt
python=${KVAUDIT_KVENV_BASE_PYTHON:-python3}
want="$(sha256sum "$requirements" | cut -d' ' -f1) $("$python" -c 'import sys; print("python%d.%d" % sys.version_info[:2])')"
stamp="$venv/.kvaudit-requirements.sha256"

mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9

t0=$SECONDS
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && "$venv/bin/python" -c 'import torch, kvpress' 2>/dev/null; then
  echo "kvenv: $venv matches $requirements ($want): reused" >&2
else
  if [[ ! -x "$venv/bin/python" ]]; then
    echo "kvenv: creating $venv from $requirements" >&2
    "$python" -m venv "$venv"
  else
    echo "kvenv: $venv has no matching stamp: bringing it to the pins of $requirements" >&2
  fi
  # A failed install leaves no stamp, so the next run tries again.
  rm -f "$stamp"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements"
  "$venv/bin/python" -c 'import torch, kvpress' || { echo "kvenv: $venv does not import torch + kvpress" >&2; exit 1; }
  echo "$want" > "$stamp"
  echo "kvenv: $venv ready in $((SECONDS - t0)) s ($(du -sh "$venv" 2>/dev/null | cut -f1))" >&2
fi
echo "$venv/bin/python"
