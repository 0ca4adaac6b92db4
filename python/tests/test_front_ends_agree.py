"""One question, one answer: the CLI, the Python package and `kvaudit conform --replay` return the same verdict kind
and rule on the same claim, for ChunkKV, EG-ChunkKV and Page-EntroKV, on tie-heavy generated inputs and on
near-ties placed on both sides of the page-score tolerance; partitions give the same JSON answer."""

from __future__ import annotations

import json
import sys
from fractions import Fraction

import numpy as np
import pytest

import kvaudit

ECHO = __import__("pathlib").Path(__file__).with_name("echo_impl.py")


def conform_verdict(cli, method, replay_line, claim, *extra):
    """(verdict, rule) of `kvaudit conform --replay` on one request answered with `claim`."""
    line = cli.json_file({})  # a fresh file name
    with open(line, "w") as f:
        f.write(replay_line + "\n")
    answer = cli.json_file(claim)
    code, out, stdout, err = cli.run("conform", "--method", method, "--impl", f"{sys.executable} {ECHO} {answer}",
                                     "--replay", line, *extra)
    assert out is not None, err
    rule = out.get("counterexample", {}).get("rule", "")
    assert code == (0 if out["verdict"] == "conforms" else 1), (code, out["verdict"], err)
    return out["verdict"], rule


def tie_heavy(heads, tokens, rng, pool=(0.0, 0.25, 0.5, 1.0)):
    return rng.choice(np.asarray(pool, np.float32), size=(heads, tokens))


def chunk_claims(method, scores, ratio, rng):
    kept = kvaudit.select(method, scores, ratio)
    kept = kept if kept.ndim == 1 else None
    if kept is None or len(kept) == 0:
        return []
    T = scores.shape[1]
    claims = [kept.tolist(), kept.tolist()[1:]]  # the selector's answer; one position short (budget)
    missing = sorted(set(range(T)) - set(kept.tolist()))
    if missing:
        swapped = kept.tolist()
        swapped[int(rng.integers(len(swapped)))] = missing[int(rng.integers(len(missing)))]
        claims.append(sorted(swapped))
    return claims


@pytest.mark.parametrize("method", ["chunkkv", "eg-chunkkv"])
def test_chunk_checks_agree(cli, method):
    rng = np.random.default_rng(24)
    compared = kinds = 0
    seen = set()
    for case in range(6):
        scores = tie_heavy(int(rng.integers(1, 3)), int(rng.integers(12, 45)), rng)
        ratio = ["0.5", "0.75", "0.9"][case % 3]
        for claim in chunk_claims(method, scores, ratio, rng):
            v = kvaudit.check(method, scores, claim, ratio)
            code, out, _, err = cli.run("check", "--method", method, "--scores", cli.npy(scores), "--compression-ratio", ratio,
                                        "--selection", cli.json_file({"kept": claim}))
            assert out is not None, err
            c_verdict, c_rule = conform_verdict(cli, method, v.replay, {"kept": claim})
            assert (v.status, v.rule) == (out["verdict"], out["rule"]) == (c_verdict, c_rule), (scores.tolist(), ratio, claim)
            seen.add(v.status)
            compared += 1
    assert {"conforms", "violates"} <= seen, seen
    print(f"{method}: {compared} claims, verdicts {sorted(seen)}")


def page_cli(cli, attn, claim, G, P, ratio, sinks, precision):
    code, out, _, err = cli.run("check-pages", "--attn", cli.npy(attn), "--claim", cli.json_file({"kept_pages": claim}),
                                "--group-size", G, "--page-size", P, "--compression-ratio", ratio, "--sinks", sinks,
                                "--precision", precision)
    assert out is not None, err
    assert code == {"conforms": 0, "violates": 1}.get(out["verdict"], 3)
    return out["verdict"], out["rule"]


def page_verdicts(cli, attn, claim, G, P, ratio, sinks, precision):
    v = kvaudit.check_pages(attn, claim, G, P, ratio, sinks=sinks, precision=precision)
    c = page_cli(cli, attn, claim, G, P, ratio, sinks, precision)
    r = conform_verdict(cli, "page-entrokv", v.replay, {"kept_pages": claim}, "--precision", precision)
    return (v.status, v.rule), c, r


def test_page_checks_agree_on_tie_heavy_inputs(cli):
    rng = np.random.default_rng(25)
    seen = set()
    for case in range(8):
        G, P = [1, 2, 3][case % 3], [1, 2, 4][case % 3]
        T = int(rng.integers(8, 40))
        raw = tie_heavy(G * int(rng.integers(1, 3)), T, rng) + np.float32(0.25)
        attn = (raw / raw.sum(axis=1, keepdims=True, dtype=np.float64)).astype(np.float32)
        ratio, sinks = ["0.5", "0.75"][case % 2], case % 3
        pages = [p.tolist() for p in kvaudit.page_select(attn, G, P, ratio, sinks=sinks)]
        n = -(-T // P)
        claims = [pages]
        if pages[0] and len(pages[0]) < n:
            out_of = sorted(set(range(n)) - set(pages[0]))
            claims.append([sorted(pages[0][:-1] + [out_of[-1]])] + pages[1:])  # a page swapped
            claims.append([pages[0][:-1]] + pages[1:])                           # a page that fits left out
        for claim in claims:
            py, c, r = page_verdicts(cli, attn, claim, G, P, ratio, sinks, "float32")
            assert py == c == r, (attn.tolist(), claim, G, P, ratio, sinks)
            seen.add(py[0])
    assert {"conforms", "violates"} <= seen


def near_tie(delta: Fraction):
    """One head, P = 1, no sinks, T = 64, ratio 0.75 (budget 16): 15 clear winners, then two positions a < b whose
    exact scores differ by about `delta` relatively (|b - a| = d (a + b)), then 47 clear losers. The claim keeps a
    instead of b. Returns the attention, the claim and the exact relative gap."""
    a = np.float32(1 / 64)
    b = np.float32(float(Fraction(float(a)) * (1 + 2 * delta)))  # (b - a) / (a + b) = delta / (1 + delta), then rounded
    fa, fb = Fraction(float(a)), Fraction(float(b))
    gap = (fb - fa) / (fa + fb)
    row = np.full(64, np.float32(1 / 256), np.float32)
    row[:15] = np.float32((1 - 47 / 256 - float(a) - float(b)) / 15)
    row[20], row[40] = a, b
    claim = [sorted(list(range(15)) + [20])]
    return row[None, :], claim, gap


def float32_bound(T, G, P):
    n = 7 * T + 2 * G + P + 16
    return Fraction(n, 2 ** 24) / (1 - Fraction(n, 2 ** 24))


@pytest.mark.parametrize("side", [Fraction(1, 2), Fraction(2)])
def test_page_near_ties_on_both_sides_of_the_float32_bound(cli, side):
    gamma = float32_bound(64, 1, 1)
    attn, claim, gap = near_tie(gamma * side)
    assert (gap <= gamma) == (side < 1), (float(gap), float(gamma))  # the inputs sit where they were meant to
    for precision, expect in (("float32", "conforms" if side < 1 else "violates"), ("float64", "violates"), ("exact", "violates")):
        py, c, r = page_verdicts(cli, attn, claim, 1, 1, "0.75", 0, precision)
        assert py == c == r, (precision, py, c, r)
        assert py[0] == expect, (precision, py)
        if expect == "violates":
            # Beyond the bound under this precision the two pages do not tie: the score order decides.
            assert py[1] == "score-order", py


def test_partition_answers_agree(cli):
    rng = np.random.default_rng(26)
    for case in range(6):
        n = int(rng.integers(4, 12))
        raw = rng.choice(np.asarray([0.0, 1.0, 1.0, 2.0, 4.0]), size=n) + (np.arange(n) == 0)
        p = raw / raw.sum()
        budget, groups = float(rng.choice([0.5, 1.0, 1.5, 2.0])), [None, 2, 3][case % 3]
        args = ["partition", "--probs", cli.npy(p), "--entropy-budget", budget, "--solver", "enumerate"]
        if groups:
            args += ["--groups", groups]
        code, out, _, err = cli.run(*args)
        assert code == 0, err
        assert kvaudit.partition(p, budget, groups=groups, solver="enumerate") == out
