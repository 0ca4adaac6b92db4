"""Hypothesis: kvaudit.testing's tie-heavy strategies against check(select(...)), with the distribution of the
generated cases asserted (ties at the cut, partial chunks, T < C happen), and mutants that must be caught."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import kvaudit
from kvaudit.testing import HAVE_HYPOTHESIS, assert_conforms

pytestmark = pytest.mark.skipif(not HAVE_HYPOTHESIS, reason="Hypothesis is not installed")

if HAVE_HYPOTHESIS:
    from hypothesis import HealthCheck, given, settings, strategies as st

    from kvaudit.testing import score_arrays, selector_cases

    SETTINGS = settings(max_examples=300, deadline=None, derandomize=True,
                        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

    def classify(method, scores, kw, kept):
        x = scores.astype(np.float64).sum(axis=0)
        T, c = x.size, kw["chunk_length"]
        tags = []
        if T < c:
            tags.append("T<C")
        if T % c:
            tags.append("partial-chunk")
        k = np.ndim(kept) == 1 and len(kept)
        if k and k < T:
            order = np.sort(x)[::-1]
            if order[k - 1] == order[k]:
                tags.append("tie-at-cut")
        if len(np.unique(x)) < T:
            tags.append("ties")
        return tags

    SEEN = collections.Counter()

    @pytest.mark.parametrize("flavour", ["kvpress", "exact"])
    def test_select_conforms_on_tie_heavy_cases(flavour):
        SEEN.clear()

        @SETTINGS
        @given(selector_cases(flavour=flavour))
        def run(case):
            method, scores, kw = case
            kept = kvaudit.select(method, scores, **kw)
            SEEN.update(classify(method, scores, kw, kept))
            SEEN["cases"] += 1
            assert_conforms(kvaudit.check(method, scores, kept, **kw), f"{method} {kw}")
            # What canonical_first relies on: the full admissibility procedure accepts the canonical selection.
            v = kvaudit.check(method, scores, kept, canonical_first=False, **kw)
            assert_conforms(v, f"{method} {kw} (full procedure)")
            assert np.array_equal(v.admissible_answer, kept)

        run()
        print(dict(SEEN))
        assert SEEN["cases"] >= 200
        for tag in ("ties", "tie-at-cut", "partial-chunk", "T<C"):
            assert SEEN[tag] >= 5, (tag, dict(SEEN))

    @SETTINGS
    @given(selector_cases(), st.integers(0, 2**32 - 1))
    def test_canonical_first_gives_the_same_verdict(case, seed):
        method, scores, kw = case
        kept = kvaudit.select(method, scores, **kw)
        if np.ndim(kept) == 2:
            return
        rng = np.random.default_rng(seed)
        claim = np.sort(rng.choice(scores.shape[1], size=len(kept), replace=False)) if len(kept) else kept
        a = kvaudit.check(method, scores, claim, canonical_first=True, **kw)
        b = kvaudit.check(method, scores, claim, canonical_first=False, **kw)
        assert (a.status, a.rule, a.message) == (b.status, b.rule, b.message)

    @SETTINGS
    @given(score_arrays(min_tokens=12, max_tokens=60, allow_negative=False), st.sampled_from(["0.5", "0.75", "0.9"]))
    def test_dropping_a_kept_position_is_caught(scores, ratio):
        kept = kvaudit.select("eg-chunkkv", scores, ratio)
        v = kvaudit.check("eg-chunkkv", scores, kept[1:], ratio)  # one short: the budget rule, or the named mistake
        assert v.status == "violates" and v.rule in ("budget", "budget-off-by-one") and not v

    @SETTINGS
    @given(score_arrays(min_tokens=20, max_tokens=60, allow_negative=False))
    def test_lowest_scores_are_caught_unless_tied(scores):
        x = scores.astype(np.float64).sum(axis=0)
        kept = kvaudit.select("eg-chunkkv", scores, "0.5", chunk_length=4, rescue_size=1)
        worst = np.sort(np.argsort(x, kind="stable")[: len(kept)])
        v = kvaudit.check("eg-chunkkv", scores, worst, "0.5", chunk_length=4, rescue_size=1)
        if x[worst].sum() < x[kept].sum():  # a strictly worse set of values cannot be admissible
            assert not v, (worst, kept)
