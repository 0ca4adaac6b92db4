"""kvaudit in-process: the C++ toolkit's oracles, selectors and checkers for Python test suites.

Every function calls the same C++ code as the matching ``kvaudit`` CLI subcommand (no second implementation);
the dict-returning ones return exactly the CLI's JSON object. Bad input raises ``ValueError`` with the CLI's
one-line message (less its ``kvaudit: `` prefix), the file path replaced by the argument's name
(``scores``, ``kept``, ``probs``, ``attention``, ``kept_pages``); flag-named messages keep the flag
(``--compression-ratio: ...``). See docs/python.md.

Arrays: numpy arrays, anything exporting the buffer protocol or DLPack (torch tensors, without a torch
dependency), or anything ``numpy.asarray`` accepts; any strides; float16, bfloat16 (DLPack), float32 or
float64, read exactly as stored. The selectors and Page-EntroKV compute in float32 (as kvpress does): values
that float32 cannot hold exactly are rounded there, counted in the CLI's ``precision`` object and announced
by a ``Float32RoundingWarning``. Partition probabilities reach the exact solver as stored (float64 unrounded).

Compression ratios: decimal text (``"0.9"``, read exactly) or a number, read as its shortest repr
(``0.9`` -> ``"0.9"``; ``1e-05`` -> ``"0.00001"``; ``numpy.float32(0.9)`` -> ``"0.8999999761581421"``).
"""

from __future__ import annotations

import json as _json
from decimal import Decimal as _Decimal
from numbers import Integral as _Integral, Real as _Real

import numpy as _np

from . import _kvaudit
from ._kvaudit import Float32RoundingWarning, Verdict

__all__ = [
    "budget", "select", "check", "partition", "page_select", "check_pages", "union_overhead",
    "Verdict", "Float32RoundingWarning", "ratio_text",
]
__version__ = "0.1.0"

_METHODS = ("chunkkv", "eg-chunkkv")


def ratio_text(compression_ratio) -> str:
    """The decimal text a compression ratio is read as: a str as given; a number as its shortest repr."""
    if isinstance(compression_ratio, str):
        return compression_ratio
    if isinstance(compression_ratio, bool) or not isinstance(compression_ratio, (_Real, _np.floating, _np.integer)):
        raise ValueError(f"--compression-ratio: rho: expected decimal text or a number, got {compression_ratio!r}")
    if isinstance(compression_ratio, (_Integral, _np.integer)):
        return str(int(compression_ratio))
    text = repr(float(compression_ratio))
    if "e" in text or "E" in text:  # the CLI reads plain decimals only: expand the same value
        text = format(_Decimal(text), "f")
    return text


def _array(x):
    """Pass arrays the extension can read directly (buffer protocol / DLPack) untouched; convert the rest."""
    if type(x) is _np.ndarray:
        if not x.dtype.isnative:
            return x.astype(x.dtype.newbyteorder("="))
        return x
    if hasattr(x, "__dlpack__"):
        return x
    a = _np.asarray(x)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    return a


def _opt_int(x, name):
    if x is None:
        return None
    if isinstance(x, bool) or not isinstance(x, (_Integral, _np.integer)):
        raise ValueError(f"--{name.replace('_', '-')}: {name}: expected an integer, got {x!r}")
    return int(x)


def _int(x, name):
    v = _opt_int(x, name)
    if v is None:
        raise ValueError(f"--{name.replace('_', '-')}: {name}: expected an integer, got None")
    return v


def _knobs(chunk_length, rescue_size, entropy_threshold):
    thr = None if entropy_threshold is None else float(entropy_threshold)
    return _opt_int(chunk_length, "chunk_length"), _int(rescue_size, "rescue_size"), thr


def budget(tokens, compression_ratio, chunk_length=None) -> dict:
    """``kvaudit budget``: the exact budget, kvpress's float budget and ChunkKV's possible kept-token counts.

    ``chunk_length`` defaults to 10, as the CLI's ``--chunk-length``.
    """
    c = 10 if chunk_length is None else _int(chunk_length, "chunk_length")
    return _json.loads(_kvaudit.budget_json(_int(tokens, "tokens"), ratio_text(compression_ratio), c))


def select(method, scores, compression_ratio, *, chunk_length=None, rescue_size=4, entropy_threshold=None,
           flavour="kvpress", median="lower", full=False):
    """``kvaudit select``: the positions the optimized selector keeps for a ``(T,)`` or ``(heads, T)`` array.

    Returns an int64 numpy array of increasing positions; for kvpress ChunkKV's per-head fallback (T < chunk
    length), a ``(heads, k)`` array, one row per head. ``full=True`` returns the CLI's JSON object instead.
    Defaults follow kvpress: chunk length 10 for eg-chunkkv, 20 for chunkkv; rescue size 4.
    """
    c, r, thr = _knobs(chunk_length, rescue_size, entropy_threshold)
    return _kvaudit.select(method, _array(scores), ratio_text(compression_ratio), c, r, thr, flavour, median, bool(full))


def check(method, scores, kept, compression_ratio, *, chunk_length=None, rescue_size=4, entropy_threshold=None,
          flavour="kvpress", median="lower", canonical_first=None) -> Verdict:
    """``kvaudit check``: is ``kept`` a selection the spec produces under some order of tied values?

    ``kept``: a sequence / 1-D integer array of positions, or one per head (a sequence of sequences or a 2-D
    array, the CLI's ``kept_per_head``). Order, duplicates and range are judged, not rejected. Returns a
    ``Verdict``; ``bool(verdict)`` is True only for "conforms" (inconclusive never passes).

    ``canonical_first``: accept a claim equal to the oracle's canonical selection (ties toward the lower index, a
    spec output by definition) without running the admissibility procedure; any other claim is judged by it. When
    off, the canonical selection is compared only where the procedure is inconclusive (a float32 evaluation that may
    overflow). None (default, as for the CLI and conform): on for the kvpress flavour (its canonical selection
    costs microseconds, the full procedure milliseconds), off for the exact flavour. The verdict is the same either
    way.
    """
    c, r, thr = _knobs(chunk_length, rescue_size, entropy_threshold)
    if not isinstance(kept, _np.ndarray) and hasattr(kept, "__dlpack__"):
        kept = _np.from_dlpack(kept)
    fast = None if canonical_first is None else bool(canonical_first)
    return _kvaudit.check(method, _array(scores), kept, ratio_text(compression_ratio), c, r, thr, flavour, median, fast)


def partition(probs, entropy_budget, groups=None, solver="exact", time_limit=None) -> dict:
    """``kvaudit partition``: the entropy-budgeted contiguous partition of a 1-D probability vector.

    ``solver``: "exact" (certified exact), "enumerate" or "greedy"; ``groups`` fixes m (None: free form);
    ``time_limit`` in seconds for the exact search (None: the CLI's default, 10 s). Returns the CLI's JSON.
    """
    t = 10.0 if time_limit is None else float(time_limit)
    return _json.loads(_kvaudit.partition_json(_array(probs), float(entropy_budget), _opt_int(groups, "groups"), solver, t))


def _knob(value):
    """A choice knob as the text the one option parser reads: None is "the preset's choice"."""
    return "" if value is None else value if isinstance(value, str) else str(value)


def _page_knobs(group_size, page_size, compression_ratio, sinks, knobs):
    names = ("pooling", "page_score", "source", "sink_pages", "greedy", "preset", "temperature", "entropy_on", "budget_unit",
             "page_count_rule")
    return (_int(group_size, "group_size"), _int(page_size, "page_size"), ratio_text(compression_ratio), _int(sinks, "sinks"),
            *(_knob(knobs[n]) for n in names))


def page_select(attention, group_size, page_size, compression_ratio, *, sinks=4, preset=None, pooling=None, temperature=None,
                entropy_on=None, source=None, page_score=None, sink_pages=None, budget_unit=None, page_count_rule=None,
                greedy=None, full=False):
    """``kvaudit page-select``: Page-EntroKV's kept pages for one layer's ``(q_heads, T)`` attention.

    ``preset`` ("kvaudit", "released", "paper", "entro-prefill") sets every choice at once; a knob given overrides
    it; None takes the preset's choice (docs/page-entrokv.md sections 1 and 8). Returns a list with one int64 array of kept page indices per KV group; ``full=True`` returns the CLI's JSON
    object (weights, Renyi-2 entropies, retained tokens, and the exact oracle's verdict on the same input).
    """
    k = _page_knobs(group_size, page_size, compression_ratio, sinks, locals())
    out = _kvaudit.page_select(_array(attention), *k, bool(full))
    return _json.loads(out) if full else out


def check_pages(attention, kept_pages, group_size, page_size, compression_ratio, *, sinks=4, preset=None, pooling=None,
                temperature=None, entropy_on=None, source=None, page_score=None, sink_pages=None, budget_unit=None,
                page_count_rule=None, greedy=None, precision="float32") -> Verdict:
    """``kvaudit check-pages``: is ``kept_pages`` (one sequence of page indices per KV group) what Page-EntroKV
    keeps, up to the ties the implementation's arithmetic cannot resolve?

    ``precision`` is what the implementation computes page scores in: "float32" (default, torch's default dtype),
    "float64" or "exact", each with its derived error bound (proofs/14_page_score_error_bound.md), or a number: a
    relative tolerance of your own. Pages whose exact scores a, b satisfy |a - b| <= tol (a + b) may be taken in
    either order. ``Verdict.details`` is the CLI's JSON, ``Verdict.replay`` the conform request line.
    """
    k = _page_knobs(group_size, page_size, compression_ratio, sinks, locals())
    if not isinstance(kept_pages, _np.ndarray) and hasattr(kept_pages, "__dlpack__"):
        kept_pages = _np.from_dlpack(kept_pages)
    return _kvaudit.check_pages(_array(attention), kept_pages, *k, precision)


def union_overhead(attention, group_size, compression_ratio, page_size=None, page_score="sum") -> dict:
    """``kvaudit union-overhead``: |U|/k of head-independent eviction per KV group, token and page level.

    ``page_size`` defaults to 16, as the CLI's ``--page-size``. Returns the CLI's JSON object.
    """
    p = 16 if page_size is None else _int(page_size, "page_size")
    return _json.loads(_kvaudit.union_overhead_json(_array(attention), _int(group_size, "group_size"),
                                                    ratio_text(compression_ratio), p, page_score))
