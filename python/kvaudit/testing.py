"""pytest helpers: ``assert_conforms`` and, when Hypothesis is installed, tie-heavy score strategies.

The strategies mirror the generators of the C++ property suites (tests/property): values drawn from small
pools (so ties happen), zeros, bfloat16-rounded values, negative scores, partial chunks, T below the chunk
length, and rows built so that the value at the budget's cut is tied with values on both sides of it.
"""

from __future__ import annotations

import numpy as np

from . import _kvaudit
from ._kvaudit import Verdict

__all__ = ["assert_conforms", "bfloat16", "BFloat16Array", "score_arrays", "selector_cases", "HAVE_HYPOTHESIS"]


def assert_conforms(verdict: Verdict, what: str = "") -> None:
    """Fail (AssertionError) unless ``verdict.status == "conforms"``; the message carries the rule, the
    checker's message and the replay line (``kvaudit conform --replay`` accepts it)."""
    if not isinstance(verdict, Verdict):
        raise TypeError(f"assert_conforms expects a kvaudit.Verdict, got {type(verdict).__name__}")
    if verdict:
        return
    lines = [f"{what + ': ' if what else ''}{verdict.status}" + (f" (rule {verdict.rule})" if verdict.rule else "")]
    if verdict.message:
        lines.append(verdict.message)
    replay = verdict.replay
    if replay is not None:
        lines.append("replay: " + replay)
    raise AssertionError("\n".join(lines))


class BFloat16Array:
    """A bfloat16 tensor exporting DLPack only (numpy has no bfloat16), as a torch bfloat16 tensor would;
    ``.bits`` holds the uint16 bit patterns, ``.float32()`` the exact values."""

    def __init__(self, bits: np.ndarray):
        self.bits = np.ascontiguousarray(bits, dtype=np.uint16)
        self.shape = self.bits.shape

    def __dlpack__(self, **kwargs):
        return _kvaudit.bfloat16_capsule(self.bits)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU

    def float32(self) -> np.ndarray:
        return (self.bits.astype(np.uint32) << 16).view(np.float32)


def bfloat16(values) -> BFloat16Array:
    """``values`` rounded to bfloat16 (nearest even), as a DLPack-exporting tensor kvaudit reads as stored."""
    f = np.ascontiguousarray(values, dtype=np.float32)
    return BFloat16Array((_bf16_round(f).view(np.uint32) >> 16).astype(np.uint16))


def _bf16_round(a: np.ndarray) -> np.ndarray:
    """float32 values rounded to the bfloat16 grid, kept as float32 (exact)."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32).reshape(a.shape)


try:
    from hypothesis import strategies as st

    HAVE_HYPOTHESIS = True
except ImportError:  # the strategies need Hypothesis; assert_conforms does not
    HAVE_HYPOTHESIS = False


if HAVE_HYPOTHESIS:
    _POOLS = (
        [0.0, 1.0],
        [0.0, 0.5, 1.0, 2.0],
        [-1.0, 0.0, 1.0],
        [0.25, 0.5, 0.75],
        [1.0, 1.0 + 2.0 ** -20, 1.0 + 2.0 ** -19],  # ties within float32 evaluation error
    )

    @st.composite
    def score_arrays(draw, min_heads=1, max_heads=3, min_tokens=1, max_tokens=64, allow_negative=True):
        """``(heads, T)`` float32 score arrays, tie-heavy: small value pools, zeros, bf16-rounded draws, and
        runs of equal values (so ties sit at chunk boundaries and at the budget's cut)."""
        heads = draw(st.integers(min_heads, max_heads))
        tokens = draw(st.integers(min_tokens, max_tokens))
        kind = draw(st.sampled_from(["pool", "bf16", "zeros", "runs", "mixed"]))
        n = heads * tokens
        if kind == "pool":
            pool = draw(st.sampled_from(_POOLS if allow_negative else _POOLS[:2] + _POOLS[3:]))
            vals = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
        elif kind == "bf16":
            lo = -4.0 if allow_negative else 0.0
            vals = draw(st.lists(st.floats(lo, 4.0, width=32), min_size=n, max_size=n))
            vals = _bf16_round(np.asarray(vals, dtype=np.float32)).tolist()
        elif kind == "zeros":
            vals = [0.0] * n
            for i in draw(st.lists(st.integers(0, n - 1), max_size=3)):
                vals[i] = 1.0
        elif kind == "runs":  # piecewise-constant rows: equal values across chunk boundaries
            vals = []
            while len(vals) < n:
                v = draw(st.sampled_from([0.0, 0.5, 1.0, 3.0]))
                vals += [v] * draw(st.integers(1, 12))
            vals = vals[:n]
        else:
            pool = [0.0, 1.0, 2.0 ** -3, 7.0]
            vals = draw(st.lists(st.one_of(st.sampled_from(pool), st.floats(0.0, 8.0, width=32)), min_size=n, max_size=n))
        return np.asarray(vals, dtype=np.float32).reshape(heads, tokens)

    _RATIOS = ["0", "0.1", "0.25", "0.5", "0.7", "0.8", "0.85", "0.9", "0.95", "0.99"]

    @st.composite
    def selector_cases(draw, method=None, flavour="kvpress", max_tokens=64):
        """``(method, scores, kwargs)`` triples for ``kvaudit.select`` / ``kvaudit.check``: tie-heavy scores, decimal
        ratios, chunk lengths from 2 to 16 (partial trailing chunks, T < C), valid rescue sizes for the flavour."""
        m = method or draw(st.sampled_from(["chunkkv", "eg-chunkkv"]))
        scores = draw(score_arrays(max_tokens=max_tokens))
        c = draw(st.integers(2, 16))
        kw = {"compression_ratio": draw(st.sampled_from(_RATIOS)), "chunk_length": c, "flavour": flavour}
        if m == "eg-chunkkv":
            kw["rescue_size"] = draw(st.integers(1, c - 1))  # kvpress asserts C > r >= 1
        return m, scores, kw
else:  # pragma: no cover - exercised only without Hypothesis

    def score_arrays(*args, **kwargs):
        raise ImportError("kvaudit.testing.score_arrays needs Hypothesis (pip install hypothesis)")

    def selector_cases(*args, **kwargs):
        raise ImportError("kvaudit.testing.selector_cases needs Hypothesis (pip install hypothesis)")
