#!/usr/bin/env python3
"""The include layering of kvaudit, checked on the sources (CTest `layering_test`).

Layers, lowest first: core (value types, exact arithmetic, optimized selectors) -> oracle (exact references:
core's value types and exact arithmetic only) -> audit (checkers, conform, stages) -> reports (writers) ->
api (one function per question) -> the front ends cli/ and python/, which never include each other.
Also: the headers a front end includes, followed transitively through the project's own headers, pull in no
Boost.Multiprecision (heavy templates stay behind .cpp files). Prints every violation as file:line and exits 1.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')
SOURCES = (".h", ".hpp", ".cpp", ".cu", ".inl")

# What each top-level folder may include from the project (other folders are off limits).
ALLOWED = {
    "core": {"core"},
    "oracle": {"oracle", "core/types.h", "core/verdict.h", "core/error.h", "core/exact/"},
    "audit": {"audit", "core", "oracle"},
    "reports": {"reports", "audit", "core"},
    "api": {"api", "audit", "core", "oracle"},
    "cli": {"cli", "api", "audit", "reports", "core", "oracle"},
    "python/src": {"api", "audit", "core", "oracle"},
}
PROJECT = ("core/", "oracle/", "audit/", "reports/", "api/", "cli/", "python/", "tests/", "benchmarks/", "fuzz/", "proofs/")
HEAVY = "boost/multiprecision"


def includes(path):
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        m = INCLUDE.match(line)
        if m:
            yield n, m.group(1)


def allowed(layer, target):
    for a in ALLOWED[layer]:
        if target == a or target.startswith(a if a.endswith((".h", "/")) else a + "/"):
            return True
    return False


def heavy_chain(header, seen):
    """The include chain from `header` (project-relative) to Boost.Multiprecision, or None."""
    if header in seen:
        return None
    seen.add(header)
    path = ROOT / header
    if not path.exists():
        return None
    for _, inc in includes(path):
        if inc.startswith(HEAVY):
            return [header, "<" + inc + ">"]
        if inc.startswith(PROJECT):
            chain = heavy_chain(inc, seen)
            if chain:
                return [header] + chain
    return None


def main():
    problems = []
    files = 0
    for layer in ALLOWED:
        for path in sorted((ROOT / layer).rglob("*")):
            if path.suffix not in SOURCES:
                continue
            files += 1
            rel = path.relative_to(ROOT).as_posix()
            for n, inc in includes(path):
                if inc.startswith(PROJECT) and not allowed(layer, inc):
                    problems.append(f"{rel}:{n}: {layer}/ must not include {inc}")
                if layer in ("cli", "python/src") and inc.startswith(PROJECT) and inc.endswith((".h", ".hpp")):
                    chain = heavy_chain(inc, set())
                    if chain:
                        problems.append(f"{rel}:{n}: a front end reaches Boost.Multiprecision: " + " -> ".join(chain))
    for p in problems:
        print(p)
    print(f"layering: {files} files checked, {len(problems)} violation(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
