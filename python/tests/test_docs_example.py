"""The example of docs/python.md, run: a user's EG-ChunkKV (the README's stdlib adapter, kvpress 0.5.5 semantics)
checked on generated tie-heavy cases and on real-dump rows; and a deliberately wrong variant that must be caught."""

from __future__ import annotations

import math

import numpy as np
import pytest

import kvaudit
from kvaudit.testing import HAVE_HYPOTHESIS, assert_conforms


def my_eg_chunkkv(scores, rho, c=10, r=4, lower_median=True):
    """The user's press under test (README.md's adapter body)."""
    scores = np.asarray(scores, dtype=np.float32).tolist()
    T = len(scores[0])
    x = [sum(col) for col in zip(*scores)]
    if rho == 0:
        return list(range(T))
    budget = max(1, int(T * (1 - rho)))
    chunks = [(a, min(a + c, T)) for a in range(0, T, c)]
    S = [sum(x[a:b]) / (b - a) for a, b in chunks]

    def entropy(v):
        if len(v) == 1:
            return 0.0
        v = [y - min(min(v), 0.0) for y in v]
        p = [y / (sum(v) + 1e-8) for y in v]
        return min(1.0, max(0.0, -sum(q * math.log(q + 1e-8) for q in p) / math.log(len(v))))

    H = [entropy(x[a:b]) for a, b in chunks]
    med = (lambda v: sorted(v)[(len(v) - 1) // 2]) if lower_median else (lambda v: sorted(v)[len(v) // 2])
    s_med, tau, keep = med(S), med(H), set()
    for i in sorted(range(len(chunks)), key=lambda i: -S[i]):
        if budget <= 0:
            break
        a, b = chunks[i]
        n = min(b - a, budget, r if S[i] >= s_med and H[i] < tau else b - a)
        keep.update(sorted(range(a, b), key=lambda t: -x[t])[:n])
        budget -= n
    rest = sorted((t for t in range(T) if t not in keep), key=lambda t: -x[t])
    return sorted(keep | set(rest[:budget]))


def test_my_press_on_real_dump_rows(dumps):
    snap = dumps["needle"].tensor("scores.snapkv")  # (layers, kv_heads, T) float32, what kvpress ranked
    for layer in (0, 15, 29):
        for rho in ("0.5", "0.9"):
            kept = my_eg_chunkkv(snap[layer], float(rho))
            assert_conforms(kvaudit.check("eg-chunkkv", snap[layer], kept, rho), f"layer {layer} rho {rho}")


def test_wrong_median_is_caught(dumps):
    """The upper median instead of torch's lower one: found on real rows (the check can fail)."""
    snap = dumps["code_textwrap"].tensor("scores.snapkv")
    caught = sum(not kvaudit.check("eg-chunkkv", snap[l], my_eg_chunkkv(snap[l], 0.9, lower_median=False), "0.9")
                 for l in range(snap.shape[0]))
    assert caught >= 1


if HAVE_HYPOTHESIS:
    from hypothesis import given, settings

    from kvaudit.testing import selector_cases

    @settings(max_examples=150, deadline=None, derandomize=True)
    @given(selector_cases(method="eg-chunkkv", max_tokens=48))
    def test_my_press_on_generated_cases(case):
        _, scores, kw = case
        kept = my_eg_chunkkv(scores, float(kw["compression_ratio"]), kw["chunk_length"], kw["rescue_size"])
        assert_conforms(kvaudit.check("eg-chunkkv", scores, kept, **kw))
else:
    @pytest.mark.skip(reason="Hypothesis is not installed")
    def test_my_press_on_generated_cases():
        pass
