#!/usr/bin/env python3
"""kvaudit.check calls per second from a plain Python loop, and what the same check costs through the CLI.

Usage: python bench/check_throughput.py [--seconds S] [--cli PATH] [--min-rate N]
Cases: (3, T) float32 tie-heavy scores (values from a pool of 8), T in {128, 256, 512}, EG-ChunkKV and ChunkKV
(kvpress flavour, rho 0.9), the claimed selection being the selector's own (a conforming check runs every
rule; check() accepts it as the canonical selection, and the same claim is also timed through the full
admissibility procedure with canonical_first=False); also a claim one position short (stops at the budget rule: the front end's own cost) and select().
Prints one JSON object; exits 1 if any full-check rate at T <= 512 is below --min-rate (default 20000).
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

import kvaudit


def rate(fn, seconds):
    n, t0 = 0, time.perf_counter()
    while True:
        for _ in range(200):
            fn()
        n += 200
        dt = time.perf_counter() - t0
        if dt >= seconds:
            return n / dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--cli", default=os.environ.get("KVAUDIT_BIN", str(pathlib.Path(__file__).resolve().parents[2] / "build" / "kvaudit")))
    ap.add_argument("--min-rate", type=float, default=20000)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    pool = rng.standard_normal(8).astype(np.float32) ** 2
    rows, ok = [], True
    for method in ("eg-chunkkv", "chunkkv"):
        for T in (128, 256, 512):
            scores = rng.choice(pool, size=(3, T))
            kept = kvaudit.select(method, scores, "0.9")
            assert kvaudit.check(method, scores, kept, "0.9")
            check_rate = rate(lambda: kvaudit.check(method, scores, kept, "0.9"), a.seconds)
            # The same claim through the full admissibility procedure (what the CLI runs on every claim, and what
            # check() runs on any claim that is not the canonical selection).
            full_rate = rate(lambda: kvaudit.check(method, scores, kept, "0.9", canonical_first=False), a.seconds / 4)
            select_rate = rate(lambda: kvaudit.select(method, scores, "0.9"), a.seconds / 2)
            # The same call with a claim one position short: the checker stops at its budget rule, so this is
            # the cost of the front end (array conversion, parameters, Verdict) plus the first checker stages.
            short = kept[1:]
            assert kvaudit.check(method, scores, short, "0.9").rule == "budget"
            front_rate = rate(lambda: kvaudit.check(method, scores, short, "0.9"), a.seconds / 2)
            row = {"method": method, "heads": 3, "tokens": T, "check_per_s": round(check_rate),
                   "check_us": round(1e6 / check_rate, 2), "full_procedure_check_per_s": round(full_rate),
                   "budget_violation_check_per_s": round(front_rate),
                   "select_per_s": round(select_rate)}
            if pathlib.Path(a.cli).is_file():
                with tempfile.TemporaryDirectory() as d:
                    np.save(f"{d}/s.npy", scores)
                    pathlib.Path(f"{d}/k.json").write_text(json.dumps({"kept": kept.tolist()}))
                    cmd = [a.cli, "check", "--method", method, "--scores", f"{d}/s.npy", "--selection", f"{d}/k.json",
                           "--compression-ratio", "0.9"]
                    t0, n = time.perf_counter(), 20
                    for _ in range(n):
                        subprocess.run(cmd, check=True, capture_output=True)
                    row["cli_check_ms"] = round((time.perf_counter() - t0) / n * 1e3, 2)
            ok = ok and check_rate >= a.min_rate
            rows.append(row)
    print(json.dumps({"python": sys.version.split()[0], "rows": rows, "min_rate": a.min_rate, "ok": ok}, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
