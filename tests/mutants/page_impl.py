#!/usr/bin/env python3
"""Page-EntroKV over the kvaudit conform protocol (stdlib only), correct or deliberately mutated.

Usage: page_impl.py [--mutant NAME]
With no mutant this is a plain transcription of docs/page-entrokv.md; each mutant breaks one rule (MUTANTS,
with the rule kvaudit must name); RIGHT lists implementations that differ in legal ways and must pass.
"""
import json
import math
import sys
from fractions import Fraction

# mutant name -> what it breaks (kept in sync with tests/unit/conform_mutants_test.cpp)
MUTANTS = {
    "mean_pooling": "weights: w = 1/G instead of the collision-probability weights",
    "weights_raw": "weights-entropy: entropy weights from the raw rows (sinks not isolated for the weights)",
    "pool_raw": "sink-isolation: pools the raw rows when sink-isolated rows are asked for",
    "sinks_not_reserved": "reserved: sink pages compete with the others instead of being kept first",
    "budget_plus_page": "budget (over budget): walks with one page of budget more than max(1, floor((1 - rho) T))",
    "budget_float": "float-budget: int(T * (1 - float(rho))) instead of the exact decimal budget",
    "max_score": "page score: max where the sum is asked for",
    "per_head": "per-head selection: each query head picks its own pages (one list per head)",
    "unsorted": "order: kept pages in walk order, not increasing",
    "ties_ignored_reserved": "reserved: reserved pages walked by score instead of index order",
    "partial_tokens": "whole pages: kept_tokens drops the last position of every kept page",
    "stop_at_misfit": "walk: stops at the first page that does not fit when skip-misfits is asked for",
    "pool_max": "pooling-max: the max over the group's heads instead of the weighted pool",
    "union_per_head": "per-head-union: each query head walks alone, the group keeps the union of their pages",
    "budget_plus_one": "budget-off-by-one: a budget one token larger than max(1, floor((1 - rho) T))",
    "under_fill": "under-fill: the skip-misfits walk takes a page only when it leaves room (< instead of <=)",
    # the published variants' differences (docs/page-entrokv.md section 8)
    "temperature_one": "temperature: ignores the temperature knob, always w proportional to c (tau = 1)",
    "temperature_half": "temperature: always w proportional to c^2 (tau = 0.5), whatever is asked",
    "page_count_topk": "page-count-budget: keeps the top K = floor((1 - rho) T / P) pages when a token walk is asked",
    "tokens_walked": "page-count-budget: walks the token budget when a page count is asked",
}
RIGHT = {
    "ties_high": "tied page scores broken toward the higher page index",
    "fsum": "every sum with math.fsum, weights through exp(-H2) = exp(log c)",
    "with_tokens": "also sends kept_tokens, the ledger's token sets",
}


def select(q, mutant):
    rows, G, P = q["attention"], q["group_size"], q["page_size"]
    sinks, pooling, page_score = q.get("sinks", 4), q.get("pooling", "entropy"), q.get("page_score", "sum")
    source, sink_pages, greedy = q.get("source", "sink-isolated"), q.get("sink_pages", "reserved"), q.get("greedy", "skip-misfits")
    inverse_tau = int(1 / Fraction(str(q.get("temperature", "1"))))
    if mutant == "temperature_one":
        inverse_tau = 1
    if mutant == "temperature_half":
        inverse_tau = 2
    entropy_raw = q.get("entropy_on", "sink-isolated") == "raw"
    pages_unit = q.get("budget_unit", "tokens") == "pages"
    if mutant == "page_count_topk":
        pages_unit = True
    if mutant == "tokens_walked":
        pages_unit = False
    T = len(rows[0])
    add = math.fsum if mutant == "fsum" else sum
    kept_fraction = 1 - Fraction(str(q["compression_ratio"]))
    budget = max(1, int(kept_fraction * T))
    if mutant == "budget_float":
        budget = max(1, int(T * (1 - float(q["compression_ratio"]))))
    if mutant == "budget_plus_page":
        budget += P
    if mutant == "budget_plus_one":
        budget += 1
    pages = [(a, min(a + P, T)) for a in range(0, T, P)]
    if pages_unit:  # a page count K, every page costing one
        paper = q.get("page_count_rule", "paper") == "paper" or mutant == "page_count_topk"
        budget = int(kept_fraction * T / P) if paper else max(1, int(kept_fraction * len(pages)))
    if mutant == "per_head":  # each head alone: a group of one
        rows_groups = [[r] for r in rows]
    else:
        rows_groups = [rows[g:g + G] for g in range(0, len(rows), G)]
    if mutant == "union_per_head":  # each head walks alone, then the group keeps the union
        alone = select(q, "per_head")["kept_pages"]
        return {"id": q["id"], "kept_pages": [sorted(set().union(*alone[g:g + G])) for g in range(0, len(rows), G)]}
    lists, token_lists = [], []
    for heads in rows_groups:
        n = len(heads)
        iso = []
        for p in heads:
            z = add(p[sinks:])
            iso.append([0.0] * sinks + [v / z for v in p[sinks:]] if z > 0 else None)
        if mutant == "weights_raw" or entropy_raw:
            c = [add(v * v for v in p) for p in heads]
        else:
            c = [add(v * v for v in q_) if q_ else 0.0 for q_ in iso]
        if mutant == "fsum":
            c = [math.exp(math.log(x)) if x > 0 else 0.0 for x in c]
        c = [x ** inverse_tau for x in c]
        total = add(c)
        w = [x / total for x in c] if pooling == "entropy" and total > 0 and mutant != "mean_pooling" else [1 / n] * n
        raw = source == "raw" or mutant == "pool_raw"
        d = heads if raw else [q_ or [0.0] * T for q_ in iso]
        s = [add(w[h] * d[h][t] for h in range(n)) for t in range(T)]
        if mutant == "pool_max":
            s = [max(d[h][t] for h in range(n)) for t in range(T)]
        kind = "max" if mutant == "max_score" else page_score
        S = [(add if kind == "sum" else max)(s[a:b]) for a, b in pages]
        reserved = [sink_pages == "reserved" and a < sinks and mutant != "sinks_not_reserved" for a, _ in pages]
        res = [k for k in range(len(pages)) if reserved[k]]
        if mutant == "ties_ignored_reserved":
            res.sort(key=lambda k: -S[k])
        rest = [k for k in range(len(pages)) if not reserved[k]]
        if mutant == "ties_high":
            rest.sort(key=lambda k: (-S[k], -k))
        else:
            rest.sort(key=lambda k: -S[k])
        kept, used = [], 0
        for k in res + rest:
            size = 1 if pages_unit else pages[k][1] - pages[k][0]
            fits = used + size < budget if mutant == "under_fill" and greedy == "skip-misfits" else used + size <= budget
            if fits:
                kept.append(k)
                used += size
            elif greedy == "stop-at-first-misfit" or mutant == "stop_at_misfit":
                break
        lists.append(kept if mutant == "unsorted" else sorted(kept))
        tokens = []
        for k in sorted(kept):
            a, b = pages[k]
            tokens += list(range(a, b - 1 if mutant == "partial_tokens" else b))
        token_lists.append(tokens)
    answer = {"id": q["id"], "kept_pages": lists}
    if mutant in ("with_tokens", "partial_tokens"):
        answer["kept_tokens"] = token_lists
    return answer


def main():
    mutant = sys.argv[sys.argv.index("--mutant") + 1] if "--mutant" in sys.argv else ""
    if mutant and mutant not in MUTANTS and mutant not in RIGHT:
        sys.exit("unknown mutant " + mutant)
    for line in sys.stdin:
        print(json.dumps(select(json.loads(line), mutant)), flush=True)


if __name__ == "__main__":
    main()
