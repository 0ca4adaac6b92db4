#!/usr/bin/env bash
# The Python stage of scripts/test.sh (runnable alone): build the `kvaudit` package in a fresh venv from the
# repository's sources and run its pytest suite against the CLI in build/ (scripts/setup.sh builds it).
# Usage: python/ci.sh [pytest args...]      Env: KVAUDIT_BIN (default build/kvaudit), KVAUDIT_PY_VENV (reuse one)
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
venv=${KVAUDIT_PY_VENV:-$(mktemp -d)/venv}
[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -r python/requirements-ci.txt
t1=$SECONDS
CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" "$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation ./python
t2=$SECONDS
# From the repository root, so python/kvaudit (the sources, without the extension) does not shadow the install.
# pytest exits 5 when it collects nothing: that fails this script like any other non-zero exit.
KVAUDIT_BIN="${KVAUDIT_BIN:-$PWD/build/kvaudit}" "$venv/bin/python" -m pytest python/tests -q -rs -p no:cacheprovider "$@"
echo "python stage: venv + deps $((t1 - t0)) s, package build $((t2 - t1)) s, pytest $((SECONDS - t2)) s, total $((SECONDS - t0)) s"
