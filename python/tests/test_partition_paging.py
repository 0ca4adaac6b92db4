"""kvaudit.partition / page_select / check_pages / union_overhead against the CLI on the same inputs (real
attention rows from data/ and tie-heavy numpy cases); bad inputs raise the CLI's message."""

from __future__ import annotations

import numpy as np
import pytest

import kvaudit
from kvaudit.testing import assert_conforms


def real_row(dumps, prompt="needle", layer=3, head=0, n=24):
    """A probability vector from a real attention row: the first n positions' mass, renormalized (float64)."""
    a = dumps[prompt].tensor("attention.window_mean")[layer, head].astype(np.float64)
    p = np.add.reduceat(a, np.linspace(0, a.size, n + 1).astype(int)[:-1])
    return p / p.sum()


# ---- partition ------------------------------------------------------------------------------------------------

PARTITION_CASES = [
    ("exact", None, 2.0), ("exact", 4, 1.5), ("enumerate", 3, 1.0), ("enumerate", None, 2.5),
    ("greedy", None, 2.0), ("greedy", 5, 1.8), ("exact", 1, 0.0),
]


@pytest.mark.parametrize("solver,groups,budget", PARTITION_CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_partition_equals_cli(cli, dumps, solver, groups, budget, dtype):
    p = real_row(dumps, n=12 if solver == "enumerate" else 24).astype(dtype)
    args = ["partition", "--probs", cli.npy(p), "--entropy-budget", budget, "--solver", solver]
    if groups is not None:
        args += ["--groups", groups]
    code, out, _, err = cli.run(*args)
    assert code == 0, err
    got = kvaudit.partition(p, budget, groups=groups, solver=solver)
    # nodes are search statistics; everything else must be identical
    assert got == out


def test_partition_float64_reaches_the_solver_unrounded(cli):
    # Two vectors that differ only below float32's resolution: float64 input must not be narrowed.
    base = np.array([0.25, 0.25, 0.25, 0.25])
    eps = np.array([1e-12, -1e-12, 0.0, 0.0])
    a = kvaudit.partition(base, 1.0, groups=2, solver="enumerate")
    b = kvaudit.partition(base + eps, 1.0, groups=2, solver="enumerate")
    code, out, _, _ = cli.run("partition", "--probs", cli.npy(base + eps), "--entropy-budget", 1.0, "--groups", 2,
                              "--solver", "enumerate")
    assert b == out
    assert a["feasible"] and b["feasible"]


BAD_PROBS = {
    "rank2": np.full((2, 2), 0.25),
    "empty": np.zeros((0,)),
    "ints": np.array([1, 0], np.int64),
    "nan": np.array([0.5, np.nan, 0.5]),
    "negative": np.array([1.5, -0.5]),
    "sum": np.array([0.5, 0.4]),
    "complex": np.array([0.5, 0.5], np.complex64),
}


@pytest.mark.parametrize("kind", sorted(BAD_PROBS))
def test_partition_bad_probs_same_message(cli, kind):
    a = BAD_PROBS[kind]
    path = cli.npy(a)
    msg = cli.error("partition", "--probs", path, "--entropy-budget", 1.0)
    with pytest.raises(ValueError) as e:
        kvaudit.partition(a, 1.0)
    assert str(e.value) == msg.replace(path, "probs")


@pytest.mark.parametrize("budget,groups", [(-1.0, None), (float("inf"), None), (1.0, 0), (1.0, 9)])
def test_partition_bad_knobs_same_message(cli, budget, groups):
    p = np.full(8, 0.125)
    args = ["partition", "--probs", cli.npy(p), "--entropy-budget", budget] + ([] if groups is None else ["--groups", groups])
    msg = cli.error(*args)
    with pytest.raises(ValueError) as e:
        kvaudit.partition(p, budget, groups=groups)
    assert str(e.value) == msg


# ---- Page-EntroKV ---------------------------------------------------------------------------------------------

def layer_attention(dumps, prompt, layer, tokens=None):
    a = dumps[prompt].tensor("attention.window_mean")[layer]  # (9, T) float16
    return a if tokens is None else a[:, :tokens]


PAGE_CASES = [("needle", 3, 3, 16, "0.8", "entropy", "sum"), ("qa_cc0", 20, 3, 16, "0.9", "mean", "max"),
              ("code_textwrap", 29, 9, 8, "0.5", "entropy", "max"), ("summary_try", 0, 1, 32, "0.95", "entropy", "sum")]


@pytest.mark.parametrize("prompt,layer,G,P,ratio,pooling,score", PAGE_CASES)
def test_page_select_equals_cli(cli, dumps, prompt, layer, G, P, ratio, pooling, score):
    attn = layer_attention(dumps, prompt, layer)
    code, out, _, err = cli.run("page-select", "--attn", cli.npy(attn), "--group-size", G, "--page-size", P,
                                "--compression-ratio", ratio, "--pooling", pooling, "--page-score", score)
    assert code == 0, err
    full = kvaudit.page_select(attn, G, P, ratio, pooling=pooling, page_score=score, full=True)
    assert full == out
    assert out["oracle"]["verdict"] == "conforms"
    pages = kvaudit.page_select(attn, G, P, ratio, pooling=pooling, page_score=score)
    assert [p.tolist() for p in pages] == [g["kept_pages"] for g in out["groups"]]
    v = kvaudit.check_pages(attn, pages, G, P, ratio, pooling=pooling, page_score=score)
    assert_conforms(v)
    assert [p.tolist() for p in v.admissible_answer] == [p.tolist() for p in pages] or out["oracle"]["tie_admissible"] > 0


def test_check_pages_catches_wrong_selections(dumps):
    attn = layer_attention(dumps, "needle", 3)
    pages = [p.tolist() for p in kvaudit.page_select(attn, 3, 16, "0.8")]
    n_pages = -(-attn.shape[1] // 16)
    assert all(len(p) < n_pages for p in pages), "eviction happened"
    wrong = [list(p) for p in pages]
    missing = sorted(set(range(n_pages)) - set(wrong[1]))
    wrong[1] = sorted(wrong[1][:-1] + [missing[len(missing) // 2]])  # swap one kept page for a dropped one
    v = kvaudit.check_pages(attn, wrong, 3, 16, "0.8")
    assert v.status == "violates" and v.message.startswith("group 1: ") and not v
    assert v.replay.startswith('{"id": 0, "method": "page-entrokv"')
    over = [list(p) for p in pages]
    over[0] = sorted(set(over[0]) | set(missing[:3]))
    assert kvaudit.check_pages(attn, over, 3, 16, "0.8").rule == "budget"
    short = kvaudit.check_pages(attn, pages[:2], 3, 16, "0.8")
    assert short.rule == "shape" and "(3 = 9 heads / G 3), got 2" in short.message
    assert kvaudit.check_pages(attn, pages, 3, 16, "0.8", precision="exact")
    assert kvaudit.check_pages(attn, pages, 3, 16, "0.8", precision="float32")


def test_check_pages_ties_are_admissible_either_way():
    # Uniform attention: every full page ties, so any full pages within the budget are admissible.
    T, P = 64, 8
    attn = np.full((2, T), 1.0 / T, np.float32)
    canonical = kvaudit.page_select(attn, 2, P, "0.5", sinks=0)
    assert canonical[0].tolist() == [0, 1, 2, 3]
    assert kvaudit.check_pages(attn, [[4, 5, 6, 7]], 2, P, "0.5", sinks=0)
    assert not kvaudit.check_pages(attn, [[4, 5, 6]], 2, P, "0.5", sinks=0)  # misses a page that fits


@pytest.mark.parametrize("prompt,layer,G,ratio,P,score", [("needle", 3, 3, "0.8", None, "sum"),
                                                          ("code_textwrap", 15, 3, "0.95", 8, "max")])
def test_union_overhead_equals_cli(cli, dumps, prompt, layer, G, ratio, P, score):
    attn = layer_attention(dumps, prompt, layer)
    args = ["union-overhead", "--attn", cli.npy(attn), "--group-size", G, "--compression-ratio", ratio, "--page-score", score]
    if P is not None:
        args += ["--page-size", P]
    code, out, _, err = cli.run(*args)
    assert code == 0, err
    assert kvaudit.union_overhead(attn, G, ratio, page_size=P, page_score=score) == out


BAD_ATTN = {
    "rank1": np.full(8, 0.125, np.float32),
    "empty": np.zeros((2, 0), np.float32),
    "ints": np.ones((2, 4), np.int32),
    "nan": np.array([[0.5, np.nan], [0.5, 0.5]], np.float32),
    "negative": np.array([[1.5, -0.5], [0.5, 0.5]], np.float32),
    "not_distribution": np.array([[0.5, 0.4], [0.5, 0.5]], np.float32),
    "indivisible": np.full((4, 8), 0.125, np.float32),
}


@pytest.mark.parametrize("kind", sorted(BAD_ATTN))
def test_bad_attention_same_message(cli, kind):
    a = BAD_ATTN[kind]
    path = cli.npy(a)
    msg = cli.error("page-select", "--attn", path, "--group-size", 3, "--compression-ratio", "0.5")
    with pytest.raises(ValueError) as e:
        kvaudit.page_select(a, 3, 16, "0.5")
    assert str(e.value) == msg.replace(path, "attention")
    msg = cli.error("union-overhead", "--attn", path, "--group-size", 3, "--compression-ratio", "0.5")
    with pytest.raises(ValueError) as e:
        kvaudit.union_overhead(a, 3, "0.5")
    assert str(e.value) == msg.replace(path, "attention")
    with pytest.raises(ValueError) as e:
        kvaudit.check_pages(a, [[0]], 3, 16, "0.5")
    assert str(e.value) == msg.replace(path, "attention")


@pytest.mark.parametrize("flag,kw", [("--group-size", {"group_size": 0}), ("--page-size", {"page_size": 0}),
                                     ("--sinks", {"sinks": -1}), ("--pooling", {"pooling": "max"}),
                                     ("--page-score", {"page_score": "mean"}), ("--compression-ratio", {"compression_ratio": "1"})])
def test_bad_page_knobs_same_message(cli, flag, kw):
    a = np.full((3, 8), 0.125, np.float32)
    base = {"group_size": 3, "page_size": 16, "compression_ratio": "0.5", "sinks": 4, "pooling": "entropy", "page_score": "sum"}
    base.update(kw)
    args = ["page-select", "--attn", cli.npy(a), "--group-size", base["group_size"], "--page-size", base["page_size"],
            "--compression-ratio", base["compression_ratio"], "--sinks", base["sinks"], "--pooling", base["pooling"],
            "--page-score", base["page_score"]]
    msg = cli.error(*args)
    assert msg.startswith(flag)
    with pytest.raises(ValueError) as e:
        kvaudit.page_select(a, base["group_size"], base["page_size"], base["compression_ratio"], sinks=base["sinks"],
                            pooling=base["pooling"], page_score=base["page_score"])
    assert str(e.value) == msg


@pytest.mark.parametrize("preset", ["released", "paper", "entro-prefill"])
def test_page_presets_equal_cli(cli, dumps, preset):
    """A preset through Python is the CLI's preset: same pages, same knobs, and check_pages accepts them."""
    attn = layer_attention(dumps, "needle", 3)
    code, out, _, err = cli.run("page-select", "--attn", cli.npy(attn), "--group-size", 3, "--page-size", 16,
                                "--compression-ratio", "0.8", "--preset", preset)
    assert code == 0, err
    assert kvaudit.page_select(attn, 3, 16, "0.8", preset=preset, full=True) == out
    assert out["knobs"]["budget_unit"] == "pages"
    pages = kvaudit.page_select(attn, 3, 16, "0.8", preset=preset)
    assert_conforms(kvaudit.check_pages(attn, pages, 3, 16, "0.8", preset=preset))
    # The knob given overrides the preset: tau = 1 where the preset says 0.5 (or the reverse) is another selection's input.
    other = "1" if preset != "entro-prefill" else "0.5"
    assert kvaudit.page_select(attn, 3, 16, "0.8", preset=preset, temperature=other, full=True)["knobs"]["temperature"] == other


@pytest.mark.parametrize("flag,kw", [("--preset", {"preset": "authors"}), ("--temperature", {"temperature": "0.3"}),
                                     ("--budget-unit", {"budget_unit": "chunks"})])
def test_bad_variant_knobs_same_message(cli, flag, kw):
    a = np.full((3, 8), 0.125, np.float32)
    (key, value), = kw.items()
    msg = cli.error("page-select", "--attn", cli.npy(a), "--group-size", 3, "--page-size", 4, "--compression-ratio", "0.5",
                    flag, value)
    assert msg.startswith(flag)
    with pytest.raises(ValueError) as e:
        kvaudit.page_select(a, 3, 4, "0.5", **kw)
    assert str(e.value) == msg
