#!/usr/bin/env python3
"""Records the pages the authors' own Page-EntroKV pooler keeps on the shipped dumps, for the audit to judge.

Their code stays out of this repository: this script takes the pooler's source (bruce12-glitch/PageEntro-KV,
page_entrokv/core.py) as a file path with the sha256 it must have, imports that file, and runs its
PageEntroKVGroupPooler on attention.window_mean of every layer of every prompt of a dump directory, at the budgets
the seed-004 claims use (rho 0.8: "20 % budget", rho 0.98: "2 % budget"). Only the kept pages go into the output,
with provenance (repository, commit, path, file sha256, package versions, the exact command).

    /opt/kvenv/bin/python tools/foreign_selections/pageentro_released_export.py \\
        --source /tmp/pe/core.py --sha256 15d0070ee8f069818892be1c49c45f085cf816b88072a08a64cc2d65cccfb2f1 \\
        --commit 72d7db3b5b0435d01fc5b297efed33a5da130430 --data data/qwen2.5-coder-0.5b-instruct

writes <data>/pageentro_released_pages.json (format: docs/page-entrokv.md section 9). Choices, each what their
code or paper fixes, none ours:
  * the pooler is built with their defaults for tau_g (0.5), alpha (2) and sink_size (4), and with the model's
    num_query_heads / num_kv_heads and block_size = 16 (their default, and the paper's B = 16);
  * core.py takes num_retained_blocks from a caller it does not ship: we pass the paper's
    K = floor((1 - rho) T / P) (eq:page_quotas with B_l = H_KV (1 - rho) T), exact from the decimal text;
  * the input is the dump's float16 window mean upcast to float32 (torch's default dtype), one layer per call
    (batch 1), on the CPU;
  * the kept pages are the indices where their returned mask is True, in increasing order.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import platform
import shlex
import sys
from fractions import Fraction

SCHEMA = "kvaudit-foreign-pages/1"
REPOSITORY = "bruce12-glitch/PageEntro-KV"
SOURCE_PATH = "page_entrokv/core.py"
CLASS_NAME = "PageEntroKVGroupPooler"
RATIOS = ["0.8", "0.98"]  # the claims' budgets: 20 % (needle recall, QA/code) and 2 % (union overhead)
PAGE_SIZE = 16
SINKS = 4
OUTPUT_NAME = "pageentro_released_pages.json"


def fail(message: str) -> None:
    print(f"pageentro_released_export: {message}", file=sys.stderr)
    sys.exit(2)


def sha256_file(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def page_count(ratio: str, tokens: int, page_size: int) -> int:
    """The paper's K = floor((1 - rho) T / P), exact from the decimal text."""
    return int((1 - Fraction(ratio)) * tokens / page_size)


def load_pooler_class(source: str, expected_sha256: str):
    actual = sha256_file(source)
    if actual != expected_sha256:
        fail(f"{source}: sha256 {actual}, expected {expected_sha256} (not the pinned file)")
    spec = importlib.util.spec_from_file_location("pageentro_released_core", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, CLASS_NAME):
        fail(f"{source}: no class {CLASS_NAME}")
    return getattr(module, CLASS_NAME)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", required=True, help="local copy of their page_entrokv/core.py")
    ap.add_argument("--sha256", required=True, help="the sha256 the source file must have")
    ap.add_argument("--commit", required=True, help="the commit of " + REPOSITORY + " the source was read at")
    ap.add_argument("--data", required=True, help="a dump directory (manifest.json + safetensors)")
    ap.add_argument("--out", help="output file (default <data>/" + OUTPUT_NAME + ")")
    args = ap.parse_args()
    if len(args.commit) != 40 or any(c not in "0123456789abcdef" for c in args.commit):
        fail(f"--commit: {args.commit!r} is not a 40-hex-digit commit")

    import numpy as np
    import safetensors
    import torch
    from safetensors import safe_open

    torch.set_num_threads(1)
    Pooler = load_pooler_class(args.source, args.sha256)
    manifest_path = os.path.join(args.data, "manifest.json")
    with open(manifest_path) as f:
        manifest = json.load(f)

    prompts = []
    for p in manifest["prompts"]:
        dump = os.path.join(args.data, p["file"])
        if sha256_file(dump) != p["sha256"]:
            fail(f"{dump}: sha256 differs from {manifest_path} field prompts[{p['name']}].sha256")
        with safe_open(dump, "pt") as s:
            attn = s.get_tensor("attention.window_mean").to(torch.float32)
        layers, q_heads, tokens = attn.shape
        if q_heads != p["q_heads"] or tokens != p["tokens"] or layers != p["layers"]:
            fail(f"{dump}: attention.window_mean shape {tuple(attn.shape)} disagrees with {manifest_path}")
        pooler = Pooler(num_query_heads=q_heads, num_kv_heads=p["kv_heads"], block_size=PAGE_SIZE, sink_size=SINKS)
        selections = {}
        for ratio in RATIOS:
            k = page_count(ratio, tokens, PAGE_SIZE)
            kept = []
            for layer in range(layers):
                mask = pooler(attn[layer].unsqueeze(0), k)[0]  # (kv_heads, pages)
                kept.append([np.flatnonzero(mask[g].numpy()).tolist() for g in range(mask.shape[0])])
            selections[ratio] = {"num_retained_blocks": k, "kept_pages": kept}
        prompts.append({"name": p["name"], "file": p["file"], "sha256": p["sha256"], "tokens": tokens,
                        "layers": layers, "q_heads": q_heads, "kv_heads": p["kv_heads"], "selections": selections})
        print(f"{p['name']}: {layers} layers x {len(RATIOS)} ratios", file=sys.stderr)

    record = {
        "schema": SCHEMA,
        "method": "page-entrokv",
        "judged_with_preset": "released",
        "source": {"repository": REPOSITORY, "path": SOURCE_PATH, "commit": args.commit, "sha256": args.sha256,
                   "class": CLASS_NAME,
                   "constructor": {"num_query_heads": "the dump's q_heads", "num_kv_heads": "the dump's kv_heads",
                                   "block_size": PAGE_SIZE, "sink_size": SINKS,
                                   "tau_g": "their default (0.5)", "alpha": "their default (2.0)"}},
        "num_retained_blocks_rule": "paper: floor((1 - rho) T / P)",
        "input": "attention.window_mean, float16 in the dump, upcast to float32; one layer per call, batch 1, CPU",
        "page_size": PAGE_SIZE,
        "sinks": SINKS,
        "ratios": RATIOS,
        "model": manifest["model"]["id"],
        "packages": {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
                     "safetensors": safetensors.__version__},
        "command": " ".join(shlex.quote(a) for a in ["/opt/kvenv/bin/python",
                                                      "tools/foreign_selections/pageentro_released_export.py",
                                                      "--source", "<their page_entrokv/core.py>", "--sha256", args.sha256,
                                                      "--commit", args.commit, "--data", args.data]),
        "prompts": prompts,
    }
    out = args.out or os.path.join(args.data, OUTPUT_NAME)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(record, f, separators=(",", ":"))
        f.write("\n")
    os.replace(tmp, out)  # never a half-written record
    print(f"wrote {out} ({os.path.getsize(out)} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
