#!/usr/bin/env python3
"""The authors' Page-EntroKV pooler (bruce12-glitch/PageEntro-KV, page_entrokv/core.py @72d7db3b), re-implemented from
its released definitions (docs/page-entrokv.md section 8) in stdlib Python, serving `kvaudit conform --method
page-entrokv`. None of their code is copied: this reads their definitions, not their source.

What their pooler does, and so what this adapter does, whatever the request's knobs say:
  * Renyi-2 entropy, natural log, eps = 1e-12 inside the log: H2 = -ln(sum a^2 + 1e-12), computed on the
    sink-isolated row a = p masked on the first `sinks` positions and divided by max(mass, 1e-12);
  * head weights softmax(-H2 / tau_g) within the KV group, tau_g = 0.5;
  * the pooled score is the weighted sum of the RAW rows (sinks included);
  * a page's score is the max over its positions (the partial last page zero-padded);
  * the top `num_retained_blocks` pages by score (torch.topk; ties: the highest index, as observed); the
    count comes from the caller, which PageEntro-KV does not ship: here the paper's K = floor((1 - rho) T / P).
Only G, P, sinks and the compression ratio are read from the request. `kvaudit conform --preset released` sends
the matching knobs; under kvaudit's defaults this adapter must be killed with named rules.
"""
import json
import math
import sys
from fractions import Fraction

TAU_G = 0.5
EPS = 1e-12


def pool_pages(rows, group_size, block_size, sink_size, num_retained_blocks):
    T = len(rows[0])
    n_sink = min(sink_size, T)
    kept_per_group = []
    for first in range(0, len(rows), group_size):
        heads = rows[first:first + group_size]
        entropies = []
        for p in heads:
            masked = [0.0] * n_sink + list(p[n_sink:])
            mass = max(sum(masked), EPS)
            isolated = [v / mass for v in masked]
            entropies.append(-math.log(sum(v * v for v in isolated) + EPS))
        logits = [-h / TAU_G for h in entropies]
        top = max(logits)
        e = [math.exp(x - top) for x in logits]
        weights = [x / sum(e) for x in e]
        pooled = [sum(weights[h] * heads[h][t] for h in range(len(heads))) for t in range(T)]
        scores = [max(pooled[a:a + block_size]) for a in range(0, T, block_size)]
        order = sorted(range(len(scores)), key=lambda k: (-scores[k], -k))
        kept_per_group.append(sorted(order[:num_retained_blocks]))
    return kept_per_group


def main():
    for line in sys.stdin:
        q = json.loads(line)
        T, P = len(q["attention"][0]), q["page_size"]
        k = int((1 - Fraction(str(q["compression_ratio"]))) * T / P)  # the paper's K, exact from the decimal text
        kept = pool_pages(q["attention"], q["group_size"], P, q.get("sinks", 4), k)
        print(json.dumps({"id": q["id"], "kept_pages": kept}), flush=True)


if __name__ == "__main__":
    main()
