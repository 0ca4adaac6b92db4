#!/usr/bin/env python3
"""A complete Page-EntroKV (docs/page-entrokv.md) serving `kvaudit conform --method page-entrokv`, stdlib only."""
import json, sys
from fractions import Fraction

def page_entrokv(rows, G, P, rho, sinks=4, pooling="entropy", page_score="sum", source="sink-isolated",
                 sink_pages="reserved", greedy="skip-misfits"):
    T = len(rows[0])
    budget = max(1, int((1 - Fraction(str(rho))) * T))        # exact: rho is the decimal text
    pages = [(a, min(a + P, T)) for a in range(0, T, P)]        # the last page may be partial
    kept_per_group = []
    for g in range(0, len(rows), G):                            # head h belongs to KV group h // G
        heads = rows[g:g + G]
        iso = []                                                # p~: sinks removed, renormalized (or None)
        for p in heads:
            z = sum(p[sinks:])
            iso.append([0.0] * sinks + [v / z for v in p[sinks:]] if z > 0 else None)
        c = [sum(v * v for v in q) if q else 0.0 for q in iso]  # collision probability exp(-H2(p~))
        w = [x / sum(c) for x in c] if pooling == "entropy" and sum(c) > 0 else [1 / G] * G
        d = heads if source == "raw" else [q or [0.0] * T for q in iso]
        s = [sum(w[h] * d[h][t] for h in range(G)) for t in range(T)]
        S = [(sum if page_score == "sum" else max)(s[a:b]) for a, b in pages]
        reserved = [sink_pages == "reserved" and a < sinks for a, _ in pages]
        order = [k for k in range(len(pages)) if reserved[k]]
        order += sorted((k for k in range(len(pages)) if not reserved[k]), key=lambda k: -S[k])  # ties: low index
        kept, used = [], 0
        for k in order:
            size = pages[k][1] - pages[k][0]
            if used + size <= budget:
                kept.append(k)
                used += size
            elif greedy == "stop-at-first-misfit":
                break
        kept_per_group.append(sorted(kept))
    return kept_per_group

for line in sys.stdin:
    q = json.loads(line)
    options = {k: q[k] for k in ("sinks", "pooling", "page_score", "source", "sink_pages", "greedy") if k in q}
    kept = page_entrokv(q["attention"], q["group_size"], q["page_size"], q["compression_ratio"], **options)
    print(json.dumps({"id": q["id"], "kept_pages": kept}), flush=True)
