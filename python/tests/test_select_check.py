"""kvaudit.budget / select / check against the CLI on the same inputs, on the recorded kvpress selections,
and on tie-heavy numpy cases; bad inputs raise the CLI's message."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest

import kvaudit
from kvaudit.testing import assert_conforms, bfloat16


def tie_heavy(heads, tokens, seed, pool=(0.0, 0.5, 1.0, 2.0)):
    rng = np.random.default_rng(seed)
    return rng.choice(np.asarray(pool, dtype=np.float32), size=(heads, tokens))


def cli_knobs(method, ratio, chunk_length=None, rescue_size=None, flavour=None, median=None):
    args = ["--method", method, "--compression-ratio", ratio]
    if chunk_length is not None:
        args += ["--chunk-length", chunk_length]
    if rescue_size is not None:
        args += ["--rescue-size", rescue_size]
    if flavour is not None:
        args += ["--flavour", flavour]
    if median is not None:
        args += ["--median", median]
    return args


def py_knobs(chunk_length=None, rescue_size=None, flavour=None, median=None):
    kw = {"chunk_length": chunk_length}
    if rescue_size is not None:
        kw["rescue_size"] = rescue_size
    if flavour is not None:
        kw["flavour"] = flavour
    if median is not None:
        kw["median"] = median
    return kw


# ---- budget ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("tokens,ratio,c", [(4096, "0.85", 10), (1240, "0.8", 10), (1060, "0.8", 20), (7, "0.5", 10),
                                            (1, "0", 1), (32000, "0.9", 20), (1000, "0.7", None)])
def test_budget_equals_cli(cli, tokens, ratio, c):
    args = ["budget", "--tokens", tokens, "--compression-ratio", ratio] + ([] if c is None else ["--chunk-length", c])
    code, out, _, _ = cli.run(*args)
    assert code == 0
    assert kvaudit.budget(tokens, ratio, c) == out


def test_budget_float_ratio_is_its_shortest_repr():
    assert kvaudit.budget(1240, 0.8) == kvaudit.budget(1240, "0.8")
    assert kvaudit.budget(1240, 0.8)["exact_budget"] == 248 and kvaudit.budget(1240, 0.8)["kvpress_float_budget"] == 247
    assert kvaudit.ratio_text(1e-05) == "0.00001"
    assert kvaudit.ratio_text(np.float32(0.9)) == "0.8999999761581421"


@pytest.mark.parametrize("args,call", [
    (["--tokens", 0, "--compression-ratio", "0.5"], lambda: kvaudit.budget(0, "0.5")),
    (["--tokens", 10, "--compression-ratio", "1.5"], lambda: kvaudit.budget(10, "1.5")),
    (["--tokens", 10, "--compression-ratio", "1e-1"], lambda: kvaudit.budget(10, "1e-1")),
    (["--tokens", 10, "--compression-ratio", "0.5", "--chunk-length", 0], lambda: kvaudit.budget(10, "0.5", 0)),
])
def test_budget_bad_input_same_message(cli, args, call):
    msg = cli.error("budget", *args)
    with pytest.raises(ValueError) as e:
        call()
    assert str(e.value) == msg


# ---- select: the CLI's JSON, field for field ----------------------------------------------------------------

SELECT_CASES = [
    ("eg-chunkkv", (3, 97), "0.9", None, None, None),
    ("eg-chunkkv", (2, 64), "0.5", 8, 3, None),
    ("eg-chunkkv", (1, 33), "0.85", 10, 4, "exact"),
    ("chunkkv", (3, 97), "0.9", None, None, None),
    ("chunkkv", (3, 95), "0.7", 10, None, "exact"),
    ("chunkkv", (3, 7), "0.5", 10, None, None),   # T < C: kvpress's per-head fallback
    ("eg-chunkkv", (3, 5), "0.5", 10, 4, None),  # T < C
    ("chunkkv", (2, 40), "0", 10, None, None),
]


@pytest.mark.parametrize("method,shape,ratio,c,r,flavour", SELECT_CASES)
@pytest.mark.parametrize("seed", [0, 1])
def test_select_equals_cli(cli, method, shape, ratio, c, r, flavour, seed):
    scores = tie_heavy(*shape, seed)
    code, out, _, err = cli.run("select", "--scores", cli.npy(scores), *cli_knobs(method, ratio, c, r, flavour))
    assert code == 0, err
    full = kvaudit.select(method, scores, ratio, full=True, **py_knobs(c, r, flavour))
    assert full == out
    kept = kvaudit.select(method, scores, ratio, **py_knobs(c, r, flavour))
    assert kept.dtype == np.int64
    if out["per_head"]:
        assert kept.shape == (shape[0], len(out["kept_per_head"][0])) and kept.tolist() == out["kept_per_head"]
    else:
        assert kept.tolist() == out["kept"]
        assert len(kept) < shape[1] or ratio == "0", "eviction happened (not a vacuous case)"


def test_select_1d_is_one_head(cli):
    scores = tie_heavy(1, 50, 3)[0]
    code, out, _, _ = cli.run("select", "--scores", cli.npy(scores), *cli_knobs("eg-chunkkv", "0.8"))
    assert code == 0 and kvaudit.select("eg-chunkkv", scores, "0.8", full=True) == out


# ---- check: verdicts, rules and messages as the CLI's ---------------------------------------------------------

def mutate_swap(kept, tokens, rng, swapped=None):
    """Replace one kept position by one that is not kept (keeps size and order); `swapped` receives (out, in)."""
    kept = list(kept)
    missing = sorted(set(range(tokens)) - set(kept))
    i = int(rng.integers(len(kept)))
    out, kept[i] = kept[i], missing[int(rng.integers(len(missing)))]
    if swapped is not None:
        swapped[:] = [out, kept[i]]
    return sorted(kept)


@pytest.mark.parametrize("method,shape,ratio,c,r,flavour", [x for x in SELECT_CASES if x[2] != "0"])
def test_check_equals_cli(cli, method, shape, ratio, c, r, flavour):
    rng = np.random.default_rng(7)
    scores = np.round(rng.standard_normal(shape), 1).astype(np.float32) ** 2  # distinct enough to violate
    f = cli.npy(scores)
    base = kvaudit.select(method, scores, ratio, **py_knobs(c, r, flavour))
    candidates = {"selected": base}
    if base.ndim == 1:
        candidates.update(swapped=mutate_swap(base, shape[1], rng), short=base[:-1], unsorted=base[::-1],
                          out_of_range=np.append(base[:-1], shape[1]), duplicate=np.append(base[:-1], base[0]))
    seen = set()
    for name, kept in candidates.items():
        sel = {"kept_per_head": kept.tolist()} if np.ndim(kept) == 2 else {"kept": list(map(int, kept))}
        code, out, _, err = cli.run("check", "--scores", f, "--selection", cli.json_file(sel), *cli_knobs(method, ratio, c, r, flavour))
        assert code in (0, 1, 3), err
        v = kvaudit.check(method, scores, kept, ratio, **py_knobs(c, r, flavour))
        assert (v.status, v.rule, v.message) == (out["verdict"], out["rule"], out["message"]), name
        assert v.details == out, name
        assert bool(v) == (code == 0) == (v.status == "conforms")
        seen.add(v.status)
    assert "conforms" in seen
    if base.ndim == 1:
        assert "violates" in seen, "the mutants must be caught"


def test_overflowing_float32_sums_get_the_same_verdict_either_way():
    # ChunkKVPress (kvpress 0.5.5, run through tools/adapters/kvpress_adapter.py) keeps [0, 1]: the float32 sums of
    # chunks 0 and 1 both overflow to inf and tie. The float32 tolerance model cannot judge that; equality with the
    # canonical selection (the released code's arithmetic) can, whether tested first or after the procedure.
    scores = np.array([[2e38, 2e38, 3e38, 3e38, 1, 1]], dtype=np.float32)
    for first in (None, True, False):
        assert kvaudit.check("chunkkv", scores, [0, 1], "0.6", chunk_length=2, canonical_first=first).status == "conforms"
        v = kvaudit.check("chunkkv", scores, [2, 3], "0.6", chunk_length=2, canonical_first=first)
        assert v.status == "inconclusive" and not v and "may overflow" in v.message


def test_verdict_truthiness_and_fields():
    scores = np.arange(40, dtype=np.float32)
    good = kvaudit.check("eg-chunkkv", scores, kvaudit.select("eg-chunkkv", scores, "0.5"), "0.5")
    assert good and good.status == "conforms" and good.rule == "" and repr(good) == "Verdict(status='conforms')"
    bad = kvaudit.check("eg-chunkkv", scores, list(range(20)), "0.5")  # the lowest scores: inadmissible
    assert not bad and bad.status == "violates" and bad.rule and bad.message
    assert bad.admissible_answer.tolist() == list(range(20, 40))
    with pytest.raises(AssertionError) as e:
        assert_conforms(bad)
    assert bad.rule in str(e.value) and "replay: " in str(e.value) and bad.replay in str(e.value)
    assert_conforms(good)
    with pytest.raises(TypeError):
        assert_conforms(True)


MUTANT_IMPL = """
import json, sys
import kvaudit
for line in sys.stdin:   # a mutant: the selector's answer without its first position (a budget violation)
    q = json.loads(line)
    kept = kvaudit.select(q["method"], q["scores"], str(q["compression_ratio"]), chunk_length=q["chunk_length"],
                          rescue_size=q["rescue_size"])
    print(json.dumps({"id": q["id"], "kept": kept.tolist()[1:]}), flush=True)
"""


def test_replay_line_reproduces_with_kvaudit_conform(cli, tmp_path):
    import sys
    scores = tie_heavy(2, 30, 11)
    kept = kvaudit.select("eg-chunkkv", scores, "0.7")[1:]
    v = kvaudit.check("eg-chunkkv", scores, kept, "0.7")
    assert v.status == "violates" and v.rule == "budget"
    req = json.loads(v.replay)
    assert req["method"] == "eg-chunkkv" and np.array_equal(np.asarray(req["scores"], dtype=np.float32), scores)
    assert (req["compression_ratio"], req["chunk_length"], req["rescue_size"]) == (0.7, 10, 4)
    (tmp_path / "replay.jsonl").write_text(v.replay + "\n")
    (tmp_path / "mutant.py").write_text(MUTANT_IMPL)
    code, out, stdout, err = cli.run("conform", "--method", "eg-chunkkv", "--impl", f"{sys.executable} {tmp_path / 'mutant.py'}",
                                     "--replay", tmp_path / "replay.jsonl")
    assert code == 1, (stdout, err)   # the replayed case is judged non-conforming by the CLI too
    assert "budget" in stdout + err


def test_admissible_answer_is_the_selection_and_conforms():
    for seed in range(5):
        scores = tie_heavy(3, 83, seed)
        for method in ("chunkkv", "eg-chunkkv"):
            v = kvaudit.check(method, scores, [0], "0.9")
            assert not v
            ans = v.admissible_answer
            assert kvaudit.check(method, scores, ans, "0.9")
            assert np.array_equal(ans, kvaudit.select(method, scores, "0.9"))


# ---- the recorded kvpress selections (data/) -----------------------------------------------------------------

def press_knobs(press):
    m = re.fullmatch(r"(chunkkv|eg_chunkkv)_c(\d+)(?:_r(\d+))?", press)
    method = "eg-chunkkv" if m.group(1) == "eg_chunkkv" else "chunkkv"
    kw = {"chunk_length": int(m.group(2))}
    if m.group(3):
        kw["rescue_size"] = int(m.group(3))
    return method, kw


def test_recorded_selections_conform_and_mutants_do_not(dumps):
    rng = np.random.default_rng(2026)
    judged = tied_swaps = 0
    for name, d in dumps.items():
        snap = d.tensor("scores.snapkv")  # (L, K, T) float32, what each press ranked
        kept_names = [n for n in d.names() if n.startswith("kept.")]
        assert len(kept_names) == 18
        for kn in kept_names:
            _, press, cr = kn.split(".", 2)
            ratio = cr[2:]
            method, kw = press_knobs(press)
            kept = d.tensor(kn)
            for layer in (0, 13, 29):
                k = kept[layer][kept[layer] >= 0]
                v = kvaudit.check(method, snap[layer], k, ratio, **kw)
                assert_conforms(v, f"{name} {kn} layer {layer}")
                judged += 1
                swapped = []
                bad = kvaudit.check(method, snap[layer], mutate_swap(k, snap.shape[2], rng, swapped), ratio, **kw)
                # Both presses rank positions by the head-summed float32 score: a swap between positions whose sums
                # differ can never be a spec output; one between tied sums may be, and must still be decided.
                x = snap[layer].astype(np.float32).sum(axis=0, dtype=np.float32)
                if x[swapped[0]] == x[swapped[1]]:
                    tied_swaps += 1
                    assert bad.status in ("conforms", "violates"), (name, kn, layer, bad)
                else:
                    assert bad.status == "violates", (name, kn, layer, swapped, bad)
    assert judged == 4 * 18 * 3
    print(f"{judged} swaps, {tied_swaps} between tied positions")


def test_recorded_selection_same_verdict_as_cli(cli, dumps):
    d = dumps["needle"]
    snap = d.tensor("scores.snapkv")
    kept = d.tensor("kept.eg_chunkkv_c10_r4.cr0.9")[7]
    kept = kept[kept >= 0]
    f = cli.npy(snap[7])
    for claim in (kept, kept[1:]):
        code, out, _, _ = cli.run("check", "--scores", f, "--selection", cli.json_file({"kept": claim.tolist()}),
                                  *cli_knobs("eg-chunkkv", "0.9", 10, 4))
        v = kvaudit.check("eg-chunkkv", snap[7], claim, "0.9", chunk_length=10, rescue_size=4)
        assert v.details == out and bool(v) == (code == 0)


# ---- dtypes and shapes ------------------------------------------------------------------------------------------

def test_float16_as_stored_equals_cli(cli):
    scores = tie_heavy(2, 60, 5).astype(np.float16) + np.float16(0.001)
    code, out, _, _ = cli.run("select", "--scores", cli.npy(scores), *cli_knobs("eg-chunkkv", "0.8"))
    assert code == 0 and kvaudit.select("eg-chunkkv", scores, "0.8", full=True) == out


def test_bfloat16_via_dlpack_is_read_as_stored():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 70)).astype(np.float32)
    b = bfloat16(x)
    assert hasattr(b, "__dlpack__")
    rounded = ((x.view(np.uint32).astype(np.uint64) + 0x7FFF + ((x.view(np.uint32) >> 16) & 1)) >> 16 << 16)
    grid = rounded.astype(np.uint32).view(np.float32)
    assert not np.array_equal(grid, x), "bf16 rounding changed something (not vacuous)"
    for m in ("chunkkv", "eg-chunkkv"):
        assert np.array_equal(kvaudit.select(m, b, "0.8"), kvaudit.select(m, grid, "0.8"))
        assert kvaudit.check(m, b, kvaudit.select(m, grid, "0.8"), "0.8")
    assert kvaudit.select("eg-chunkkv", b, "0.8", full=True)["heads"] == 3


def test_float64_exact_in_float32_is_not_rounded():
    x = tie_heavy(2, 50, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(kvaudit.select("eg-chunkkv", x.astype(np.float64), "0.8"), kvaudit.select("eg-chunkkv", x, "0.8"))


def test_float64_rounding_is_reported_like_the_cli(cli):
    x = tie_heavy(2, 50, 4).astype(np.float64) + 1e-12  # not representable in float32
    code, out, _, _ = cli.run("select", "--scores", cli.npy(x), *cli_knobs("eg-chunkkv", "0.8"))
    assert code == 0
    with pytest.warns(kvaudit.Float32RoundingWarning, match="100 <f8 value"):
        full = kvaudit.select("eg-chunkkv", x, "0.8", full=True)
    assert full == out
    if "precision" in out:  # the CLI that narrows in its front end reports the count too
        assert out["precision"]["inputs_rounded_to_float32"] == 100


def test_non_contiguous_equals_contiguous():
    base = tie_heavy(6, 200, 8)
    for view in (base[::2, ::3], base.T.copy().T, base[:, 10:150], np.asfortranarray(base)):
        assert not view.flags.c_contiguous or view is base
        ref = np.ascontiguousarray(view)
        for m in ("chunkkv", "eg-chunkkv"):
            assert np.array_equal(kvaudit.select(m, view, "0.9"), kvaudit.select(m, ref, "0.9"))
            assert kvaudit.check(m, view, kvaudit.select(m, ref, "0.9"), "0.9")


class DLPackOnly:
    """A tensor that exports only DLPack (like a torch tensor seen without torch)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class ArrayOnly:
    def __init__(self, a):
        self._a = a

    def __array__(self, dtype=None, copy=None):
        return self._a


def test_array_likes():
    x = tie_heavy(2, 64, 12)
    ref = kvaudit.select("eg-chunkkv", x, "0.75")
    assert np.array_equal(kvaudit.select("eg-chunkkv", DLPackOnly(x), "0.75"), ref)
    assert np.array_equal(kvaudit.select("eg-chunkkv", ArrayOnly(x), "0.75"), ref)
    assert np.array_equal(kvaudit.select("eg-chunkkv", x.tolist(), "0.75"), ref)  # a list: float64, exact here
    assert kvaudit.check("eg-chunkkv", x, ref.tolist(), "0.75") and kvaudit.check("eg-chunkkv", x, DLPackOnly(ref), "0.75")


# ---- bad input: ValueError with the CLI's message (the file path replaced by the argument's name) ------------

BAD_SCORES = {
    "rank0": np.float32(1.0),
    "rank3": np.zeros((1, 2, 3), np.float32),
    "empty": np.zeros((0,), np.float32),
    "empty_heads": np.zeros((0, 5), np.float32),
    "int": np.arange(10, dtype=np.int64),
    "uint8": np.arange(10, dtype=np.uint8),
    "nan": np.array([1.0, np.nan, 2.0], np.float32),
    "inf": np.array([[1.0, 2.0], [np.inf, 0.0]], np.float64),
    "beyond_f32": np.array([1.0, 1e300], np.float64),
}


@pytest.mark.parametrize("kind", sorted(BAD_SCORES))
def test_bad_scores_same_message(cli, kind):
    a = BAD_SCORES[kind]
    path = cli.npy(a)
    msg = cli.error("select", "--scores", path, *cli_knobs("eg-chunkkv", "0.5"))
    with pytest.raises(ValueError) as e:
        kvaudit.select("eg-chunkkv", a, "0.5")
    assert str(e.value) == msg.replace(path, "scores")
    msg = cli.error("check", "--scores", path, "--selection", cli.json_file({"kept": [0]}), *cli_knobs("eg-chunkkv", "0.5"))
    with pytest.raises(ValueError) as e:
        kvaudit.check("eg-chunkkv", a, [0], "0.5")
    assert str(e.value) == msg.replace(path, "scores")


@pytest.mark.parametrize("ratio,c,r,flavour,median,thr", [
    ("1.5", None, None, None, None, None), ("abc", None, None, None, None, None), ("-0.1", None, None, None, None, None),
    ("0.5", 0, None, None, None, None), ("0.5", 4, 4, None, None, None), ("0.5", 10, 0, None, None, None),
    ("0.5", None, None, None, "mean", None), ("0.5", None, None, None, None, 0.5),
])
def test_bad_knobs_same_message(cli, ratio, c, r, flavour, median, thr):
    x = tie_heavy(1, 30, 0)
    path = cli.npy(x)
    args = cli_knobs("eg-chunkkv", ratio, c, r, flavour, median) + ([] if thr is None else ["--entropy-threshold", thr])
    msg = cli.error("select", "--scores", path, *args)
    kw = py_knobs(c, r, flavour, median)
    if thr is not None:
        kw["entropy_threshold"] = thr
    with pytest.raises(ValueError) as e:
        kvaudit.select("eg-chunkkv", x, ratio, **kw)
    assert str(e.value) == msg


@pytest.mark.parametrize("sel,kept", [
    ({"kept": [0, 1.5]}, [0, 1.5]), ({"kept": [0, True]}, [0, True]), ({"kept": 3}, 3),
    ({"kept": [1, 2**63]}, [1, 2**63]), ({"kept": "12"}, "12"),
    ({"kept": [0.0, 2.5]}, np.array([0, 2.5])), ({"kept": [0.0, 2.0]}, np.array([0.0, 2.0], np.float32)),
    ({"kept": [0, None]}, [0, None]), ({"kept_per_head": [[0], [1.5]]}, [[0], [1.5]]),
])
def test_bad_kept_same_message(cli, sel, kept):
    x = tie_heavy(1, 30, 0)
    path, spath = cli.npy(x), cli.json_file(sel)
    msg = cli.error("check", "--scores", path, "--selection", spath, *cli_knobs("eg-chunkkv", "0.5"))
    with pytest.raises(ValueError) as e:
        kvaudit.check("eg-chunkkv", x, kept, "0.5")
    assert str(e.value) == msg.replace(spath, "kept")


def test_bad_method_and_names():
    x = tie_heavy(1, 30, 0)
    with pytest.raises(ValueError, match="method: expected chunkkv or eg-chunkkv, got 'snapkv'"):
        kvaudit.select("snapkv", x, "0.5")
    with pytest.raises(ValueError, match="flavour"):
        kvaudit.check("chunkkv", x, [0], "0.5", flavour="fast")
    with pytest.raises(ValueError, match="rescue_size"):
        kvaudit.select("eg-chunkkv", x, "0.5", rescue_size=2.5)


def test_checks_from_threads_give_the_serial_verdicts():
    """check() releases the GIL around the oracle: concurrent calls must give exactly the serial verdicts."""
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(5)
    cases = []
    for i in range(24):
        scores = tie_heavy(2, 40 + i, i)
        kept = kvaudit.select("eg-chunkkv", scores, "0.8")
        claim = kept if i % 2 else np.sort(rng.choice(scores.shape[1], size=len(kept), replace=False))
        cases.append((scores, claim))
    run = lambda c: (lambda v: (v.status, v.rule, v.message))(kvaudit.check("eg-chunkkv", c[0], c[1], "0.8", canonical_first=False))
    serial = [run(c) for c in cases]
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(run, cases))
    assert threaded == serial
    assert {s for s, _, _ in serial} == {"conforms", "violates"}
