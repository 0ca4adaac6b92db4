#!/usr/bin/env python3
"""Extracts the needle study's public-domain filler: prose docstrings of Docutils modules that carry the
dedication "This module has been placed in the public domain." (Docutils' COPYING.txt: the project's files
are dedicated to the public domain, less listed exceptions; only files declaring the dedication in their own
header are used, so no exception can slip in).

Usage: python3 tools/needle_study/make_filler.py --docutils <site-packages>/docutils --out tools/needle_study/filler
Writes <out>.txt (paragraphs separated by blank lines) and <out>.provenance.json (docutils version, every
source file with its sha256, the dedication text checked). Deterministic: files in sorted order.
"""
import argparse
import ast
import hashlib
import json
import os
import re
import sys

DEDICATION = "This module has been placed in the public domain."
MIN_PARAGRAPH = 200  # characters: short docstring fragments are field lists, not prose


def prose_paragraphs(docstring: str):
    for para in re.split(r"\n\s*\n", docstring):
        lines = [l.strip() for l in para.strip().split("\n")]
        text = " ".join(lines)
        # Prose only: no doctest, no reST directives/field lists/tables, no digits (needle values must be unique).
        if (len(text) >= MIN_PARAGRAPH and ">>>" not in text and not text.startswith((":", "..", "=", "-", "+", "|"))
                and not re.search(r"\d", text) and "::" not in text):
            yield text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--docutils", required=True, help="the installed docutils package folder")
    ap.add_argument("--out", required=True, help="output path without extension")
    a = ap.parse_args()
    root = os.path.abspath(a.docutils)
    copying = None
    for cand in [os.path.join(os.path.dirname(root), d) for d in os.listdir(os.path.dirname(root))
                 if d.startswith("docutils-") and d.endswith(".dist-info")]:
        if os.path.exists(os.path.join(cand, "COPYING.txt")):
            copying = os.path.join(cand, "COPYING.txt")
            version = os.path.basename(cand)[len("docutils-"):-len(".dist-info")]
    if copying is None:
        sys.exit(f"make_filler: {root}: no docutils-*.dist-info/COPYING.txt beside it")
    files, paragraphs, seen = [], [], set()
    for dirpath, dirnames, names in sorted(os.walk(root)):
        dirnames.sort()
        for name in sorted(names):
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            src = open(path, encoding="utf-8").read()
            if DEDICATION not in src[:1500]:
                continue
            got = []
            for node in ast.walk(ast.parse(src)):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)):
                    doc = ast.get_docstring(node)
                    if doc:
                        got += [p for p in prose_paragraphs(doc) if p not in seen]
                        seen.update(got)
            if got:
                paragraphs += got
                files.append({"file": os.path.relpath(path, os.path.dirname(root)),
                              "sha256": hashlib.sha256(src.encode()).hexdigest(), "paragraphs": len(got)})
    with open(a.out + ".txt", "w", encoding="utf-8") as f:
        f.write("\n\n".join(paragraphs) + "\n")
    prov = {"source": f"Docutils {version} (PyPI), module docstrings", "license": "public-domain",
            "dedication_required_in_header": DEDICATION, "copying_sha256": hashlib.sha256(open(copying, "rb").read()).hexdigest(),
            "command": " ".join(sys.argv), "paragraphs": len(paragraphs),
            "sha256": hashlib.sha256(("\n\n".join(paragraphs) + "\n").encode()).hexdigest(), "files": files}
    with open(a.out + ".provenance.json", "w", encoding="utf-8") as f:
        json.dump(prov, f, indent=1)
        f.write("\n")
    print(f"{len(paragraphs)} paragraphs, {sum(map(len, paragraphs))} characters from {len(files)} files")


if __name__ == "__main__":
    main()
