"""Shared fixtures: the `kvaudit` CLI every function is compared with, NPY files for it, the shipped dumps."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "data"


def _cli_path() -> pathlib.Path:
    p = pathlib.Path(os.environ.get("KVAUDIT_BIN", ROOT / "build" / "kvaudit"))
    if not p.is_file():
        pytest.exit(f"the kvaudit CLI is needed to compare against: {p} not found (run scripts/setup.sh or set KVAUDIT_BIN)",
                    returncode=3)
    return p


class Cli:
    """Runs `kvaudit SUBCOMMAND ...` and returns (exit code, parsed stdout JSON or None, stderr line)."""

    def __init__(self, path: pathlib.Path, tmp: pathlib.Path):
        self.path, self.tmp, self.n = path, tmp, 0

    def npy(self, array, name="a") -> str:
        self.n += 1
        f = self.tmp / f"{name}{self.n}.npy"
        np.save(f, np.asarray(array))
        return str(f)

    def json_file(self, obj) -> str:
        self.n += 1
        f = self.tmp / f"sel{self.n}.json"
        f.write_text(json.dumps(obj))
        return str(f)

    def run(self, *args):
        r = subprocess.run([str(self.path), *map(str, args)], capture_output=True, text=True, timeout=120)
        out = json.loads(r.stdout) if r.stdout.strip() else None
        return r.returncode, out, r.stdout.strip(), r.stderr.strip()

    def error(self, *args) -> str:
        """The one-line message of a rejected input, less the `kvaudit: ` prefix (what ValueError carries)."""
        code, _, _, err = self.run(*args)
        assert code == 2, f"expected exit 2 (bad input), got {code}: {err}"
        assert err.startswith("kvaudit: ") and "\n" not in err, err
        return err[len("kvaudit: "):]


@pytest.fixture(scope="session")
def cli_path():
    return _cli_path()


@pytest.fixture
def cli(cli_path, tmp_path):
    return Cli(cli_path, tmp_path)


# ---- the shipped dumps, read with numpy alone (safetensors is 8 bytes of header length, a JSON header, data) ----

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "BF16": None}


class Dump:
    def __init__(self, path: pathlib.Path):
        raw = path.read_bytes()
        n = int.from_bytes(raw[:8], "little")
        self.header = json.loads(raw[8:8 + n])
        self.data = memoryview(raw)[8 + n:]
        self.name = path.stem

    def names(self):
        return [k for k in self.header if k != "__metadata__"]

    def tensor(self, name) -> np.ndarray:
        h = self.header[name]
        b, e = h["data_offsets"]
        return np.frombuffer(self.data[b:e], dtype=_DTYPES[h["dtype"]]).reshape(h["shape"])


@pytest.fixture(scope="session")
def manifest():
    return json.loads((DATA / "manifest.json").read_text())


@pytest.fixture(scope="session")
def dumps(manifest):
    out = {p["name"]: Dump(DATA / p["file"]) for p in manifest["prompts"]}
    assert len(out) == 4, "the four shipped prompts"
    return out
