#!/usr/bin/env python3
"""Summarizes needle-study records: retrieval rates with Wilson 95 % intervals per condition x mode x model,
paired comparisons on the same haystacks (EG-ChunkKV r4 - ChunkKV per cr, the r8 control - r4, entropy - mean
pooling) with an exact McNemar test on retrieval and an exact sign test on the teacher-forced value log-prob,
and value-token retention by value length. Writes summary.json beside each records.jsonl and prints Markdown.

Usage: python3 tools/needle_study/summarize.py data/qwen2.5-coder-0.5b-instruct/needle_study [more folders...]
Standard library only. Bad input: one line naming the file, the line, the field and the value; exit 2.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections import defaultdict

SCHEMA = "kvaudit-needle-study/1"
Z95 = 1.959963984540054
MODES = ("question-agnostic", "question-aware")
# Fields every run record carries, with the types they must have (None allowed where the run errored).
RUN_FIELDS = {"schema": str, "kind": str, "haystack": int, "mode": str, "condition": str, "method": str,
              "value_kind": str, "value": str, "depth": float, "context_tokens": int, "value_tokens": int,
              "value_span": list, "answer": (str, type(None)), "retrieved": (bool, type(None)),
              "error": (str, type(None)), "tf_mean_logprob": (float, int, type(None)),
              "tf_argmax_match": (bool, type(None)), "value_kept_per_layer": list, "value_kept_mean": (float, int),
              "wall_s": dict}
STUDY_FIELDS = ("schema", "model", "packages", "command", "threads", "seed", "filler", "conditions", "modes",
                "planned_haystacks", "completed_haystacks", "status", "protocol", "started_utc")


class BadInput(Exception):
    pass


def wilson(k: int, n: int):
    if n == 0:
        return None, None
    p = k / n
    d = 1 + Z95 ** 2 / n
    c = (p + Z95 ** 2 / (2 * n)) / d
    h = Z95 / d * math.sqrt(p * (1 - p) / n + Z95 ** 2 / (4 * n * n))
    return max(0.0, c - h), min(1.0, c + h)


def binom_two_sided(k: int, n: int) -> float:
    """Exact two-sided p of k successes in n fair trials: 2 * P(X <= min(k, n - k)), capped at 1 (n = 0: 1)."""
    if n == 0:
        return 1.0
    m = min(k, n - k)
    tail = sum(math.comb(n, i) for i in range(m + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def load(folder: str):
    study_path = os.path.join(folder, "study.json")
    records_path = os.path.join(folder, "records.jsonl")
    for p in (study_path, records_path):
        if not os.path.isfile(p):
            raise BadInput(f"{p}: not found")
    try:
        study = json.load(open(study_path, encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise BadInput(f"{study_path}: not JSON ({e.msg} at line {e.lineno})")
    for f in STUDY_FIELDS:
        if f not in study:
            raise BadInput(f"{study_path}: field {f!r} missing")
    if study["schema"] != SCHEMA:
        raise BadInput(f"{study_path}: field 'schema' is {study['schema']!r}, expected {SCHEMA!r}")
    for f in ("gguf_sha256", "id"):
        if not study["model"].get(f):
            raise BadInput(f"{study_path}: field 'model.{f}' is {study['model'].get(f)!r}")
    records = []
    with open(records_path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            where = f"{records_path}:{n}"
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                raise BadInput(f"{where}: not JSON ({e.msg})")
            for f, t in RUN_FIELDS.items():
                if f not in r:
                    raise BadInput(f"{where}: field {f!r} missing")
                if not isinstance(r[f], t) or (t is int and isinstance(r[f], bool)):
                    raise BadInput(f"{where}: field {f!r} has value {r[f]!r} of the wrong type")
            if r["schema"] != SCHEMA:
                raise BadInput(f"{where}: field 'schema' is {r['schema']!r}")
            if r["mode"] not in MODES:
                raise BadInput(f"{where}: field 'mode' is {r['mode']!r}")
            if r["condition"] not in study["conditions"]:
                raise BadInput(f"{where}: field 'condition' is {r['condition']!r}, not a condition of study.json")
            if (r["error"] is None) != (r["retrieved"] is not None):
                raise BadInput(f"{where}: field 'retrieved' is {r['retrieved']!r} with error {r['error']!r}")
            if r["error"] is None and r["value"].isdigit() and r["retrieved"] != (r["value"] in r["answer"]) \
                    and r["retrieved"]:
                raise BadInput(f"{where}: field 'retrieved' is True but the answer lacks the value")
            if not all(isinstance(x, (int, float)) and 0 <= x <= 1 for x in r["value_kept_per_layer"]) or \
                    len(r["value_kept_per_layer"]) != study["model"]["layers"]:
                raise BadInput(f"{where}: field 'value_kept_per_layer' is not one fraction per layer")
            records.append(r)
    # Counts: every completed haystack has every condition in both modes, exactly once.
    seen = defaultdict(int)
    for r in records:
        seen[(r["haystack"], r["mode"], r["condition"])] += 1
    dup = [k for k, v in seen.items() if v != 1]
    if dup:
        raise BadInput(f"{records_path}: run {dup[0]} recorded {seen[dup[0]]} times")
    done = study["completed_haystacks"]
    want = {(h, m, c) for h in range(done) for m in study["modes"] for c in study["conditions"]}
    missing = sorted(want - set(seen))
    if missing:
        raise BadInput(f"{records_path}: run {missing[0]} missing (study.json says {done} haystacks completed)")
    # A haystack cut by the time limit mid-way may leave a partial tail: ignored, and reported.
    extra = sorted(set(seen) - want)
    records = [r for r in records if r["haystack"] < done]
    return study, records, len(extra)


def rate_table(records):
    out = {}
    by = defaultdict(list)
    for r in records:
        by[(r["condition"], r["mode"])].append(r)
    for (cond, mode), rs in by.items():
        ok = [r for r in rs if r["error"] is None]
        k = sum(r["retrieved"] for r in ok)
        lo, hi = wilson(k, len(ok))
        lps = [r["tf_mean_logprob"] for r in ok]
        out.setdefault(cond, {})[mode] = {
            "n": len(ok), "retrieved": k, "rate": k / len(ok) if ok else None, "wilson95": [lo, hi],
            "errors": len(rs) - len(ok), "tf_mean_logprob_mean": sum(lps) / len(lps) if lps else None,
            "tf_argmax_match_rate": sum(r["tf_argmax_match"] for r in ok) / len(ok) if ok else None,
            "value_kept_mean": sum(r["value_kept_mean"] for r in rs) / len(rs)}
    return out


def paired(records, a: str, b: str, mode: str):
    """a - b on the haystacks where both ran without error."""
    idx = {(r["haystack"], r["condition"]): r for r in records if r["mode"] == mode}
    hs = sorted({h for h, c in idx if c == a} & {h for h, c in idx if c == b})
    pairs = [(idx[(h, a)], idx[(h, b)]) for h in hs if idx[(h, a)]["error"] is None and idx[(h, b)]["error"] is None]
    n = len(pairs)
    if n == 0:
        return {"a": a, "b": b, "mode": mode, "n": 0}
    ra = sum(x["retrieved"] for x, _ in pairs)
    rb = sum(y["retrieved"] for _, y in pairs)
    only_a = sum(x["retrieved"] and not y["retrieved"] for x, y in pairs)
    only_b = sum(y["retrieved"] and not x["retrieved"] for x, y in pairs)
    d = [x["tf_mean_logprob"] - y["tf_mean_logprob"] for x, y in pairs]
    pos, neg = sum(v > 0 for v in d), sum(v < 0 for v in d)
    return {"a": a, "b": b, "mode": mode, "n": n, "rate_a": ra / n, "rate_b": rb / n, "diff": (ra - rb) / n,
            "only_a": only_a, "only_b": only_b, "mcnemar_exact_p": binom_two_sided(only_a, only_a + only_b),
            "tf_logprob_diff_mean": sum(d) / n, "tf_sign_pos": pos, "tf_sign_neg": neg,
            "tf_sign_test_p": binom_two_sided(pos, pos + neg)}


def retention_by_length(records, conds):
    out = {}
    for cond in conds:
        for mode in MODES:
            groups = defaultdict(list)
            for r in records:
                if r["condition"] == cond and r["mode"] == mode:
                    groups[(r["value_kind"], r["value_tokens"])].append(r)
            for (kind, vt), rs in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0])):
                layers = [x for r in rs for x in r["value_kept_per_layer"]]
                out.setdefault(cond, {}).setdefault(mode, []).append({
                    "value_kind": kind, "value_tokens": vt, "runs": len(rs),
                    "kept_fraction_mean": sum(layers) / len(layers),
                    "layers_all_kept": sum(x == 1 for x in layers) / len(layers)})
    return out


def summarize(folder):
    study, records, partial = load(folder)
    conds = list(study["conditions"])
    ratios = sorted({study["conditions"][c]["compression_ratio"] for c in conds
                     if study["conditions"][c]["method"] == "chunkkv"})
    pairs = []
    for mode in MODES:
        for r in ratios:
            eg, ck, ctl = f"eg_chunkkv_c10_r4_{r}", f"chunkkv_c10_{r}", f"eg_chunkkv_c10_r8_{r}"
            pairs.append({"comparison": f"EG-ChunkKV r4 - ChunkKV, cr {r}", **paired(records, eg, ck, mode)})
            pairs.append({"comparison": f"EG-ChunkKV r8 (control) - r4, cr {r}", **paired(records, ctl, eg, mode)})
            pairs.append({"comparison": f"EG-ChunkKV r8 (control) - ChunkKV, cr {r}", **paired(records, ctl, ck, mode)})
        pairs.append({"comparison": "Page-EntroKV entropy - mean pooling, cr 0.8",
                      **paired(records, "page_entrokv_entropy_0.8", "page_entrokv_mean_0.8", mode)})
    mech = [c for c in conds if study["conditions"][c]["method"] in ("chunkkv", "eg-chunkkv")]
    summary = {"schema": "kvaudit-needle-summary/1", "model": study["model"]["id"],
               "gguf_sha256": study["model"]["gguf_sha256"], "protocol": study["protocol"],
               "scale": "small scale, stand-in model and stand-in needle protocol",
               "haystacks": study["completed_haystacks"], "planned_haystacks": study["planned_haystacks"],
               "stopped": study.get("stopped"), "status": study["status"], "partial_haystack_runs_ignored": partial,
               "context_tokens": [min(r["context_tokens"] for r in records),
                                  max(r["context_tokens"] for r in records)] if records else None,
               "haystack_wall_s": study.get("haystack_wall_s"), "rates": rate_table(records), "paired": pairs,
               "retention_by_value_length": retention_by_length(records, mech)}
    with open(os.path.join(folder, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    return summary


def fmt(x, d=2):
    return "—" if x is None else f"{x:.{d}f}"


def markdown(s):
    lines = [f"### {s['model']} — {s['haystacks']} haystacks (planned {s['planned_haystacks']}), "
             f"context {s['context_tokens'][0]}–{s['context_tokens'][1]} tokens" if s["context_tokens"] else
             f"### {s['model']} — no haystacks", ""]
    if s["stopped"]:
        lines += [f"Stopped: {s['stopped']}", ""]
    lines += ["| condition | agnostic: retrieved/n | rate [Wilson 95 %] | aware: retrieved/n | rate [Wilson 95 %] | "
              "aware tf log-p | value kept (agn / aware) |", "|---|---|---|---|---|---|---|"]
    for cond, by in s["rates"].items():
        row = [cond]
        for mode in MODES:
            m = by.get(mode)
            if not m:
                row += ["—", "—"]
                continue
            err = f" ({m['errors']} errors)" if m["errors"] else ""
            row += [f"{m['retrieved']}/{m['n']}{err}",
                    f"{fmt(m['rate'])} [{fmt(m['wilson95'][0])}, {fmt(m['wilson95'][1])}]"]
        aw = by.get("question-aware", {})
        row += [fmt(aw.get("tf_mean_logprob_mean")),
                f"{fmt(by.get('question-agnostic', {}).get('value_kept_mean'))} / {fmt(aw.get('value_kept_mean'))}"]
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "| comparison | mode | n | rate a | rate b | a − b | only a / only b | McNemar p | "
              "tf log-p a − b | sign test p |", "|---|---|---|---|---|---|---|---|---|---|"]
    for p in s["paired"]:
        if p["n"] == 0:
            lines.append(f"| {p['comparison']} | {p['mode']} | 0 | | | | | | | |")
            continue
        lines.append(f"| {p['comparison']} | {p['mode']} | {p['n']} | {fmt(p['rate_a'])} | {fmt(p['rate_b'])} | "
                     f"{p['diff']:+.2f} | {p['only_a']} / {p['only_b']} | {p['mcnemar_exact_p']:.3g} | "
                     f"{p['tf_logprob_diff_mean']:+.3f} | {p['tf_sign_test_p']:.3g} |")
    # Retention pivot: value tokens kept (mean over layers and runs) / share of layers keeping all of them, by
    # value kind and token length, ChunkKV vs EG-ChunkKV r4 vs the r8 control at each cr.
    ret = s["retention_by_value_length"]
    conds = [c for c in ret if c.startswith(("chunkkv_", "eg_chunkkv_"))]
    ratios = sorted({c.rsplit("_", 1)[1] for c in conds}, key=float)
    cols = [(r, c) for r in ratios for c in (f"chunkkv_c10_{r}", f"eg_chunkkv_c10_r4_{r}", f"eg_chunkkv_c10_r8_{r}")
            if c in ret]
    for mode in MODES:
        keys = sorted({(x["value_kind"], x["value_tokens"]) for c in conds for x in ret[c].get(mode, [])},
                      key=lambda k: (k[1], k[0]))
        if not keys:
            continue
        head = " | ".join(f"{c.split('_c10_')[0].replace('eg_chunkkv', 'EG').replace('chunkkv', 'ChunkKV')}"
                          f"{'' if c.startswith('chunkkv') else ' ' + c.split('_')[3]} {r}" for r, c in cols)
        lines += ["", f"Value tokens kept, {mode} (mean fraction over layers and runs / share of layers keeping all):",
                  "", f"| value (tokens) | runs | {head} |", "|---|---|" + "---|" * len(cols)]
        for kind, vt in keys:
            cells = []
            runs = 0
            for _, c in cols:
                x = next((x for x in ret[c].get(mode, []) if (x["value_kind"], x["value_tokens"]) == (kind, vt)), None)
                runs = x["runs"] if x else runs
                cells.append(f"{x['kept_fraction_mean']:.2f} / {x['layers_all_kept']:.2f}" if x else "—")
            lines.append(f"| {kind} ({vt}) | {runs} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv):
    if not argv:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    for folder in argv:
        try:
            s = summarize(folder)
        except BadInput as e:
            print(f"summarize: {e}", file=sys.stderr)
            return 2
        print(markdown(s))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
