#!/usr/bin/env python3
"""A complete EG-ChunkKV (kvpress 0.5.5 semantics) serving `kvaudit conform`, stdlib only: the docs' example."""
import json, math, sys

def eg_chunkkv(scores, rho, c, r):
    T = len(scores[0])
    x = [sum(col) for col in zip(*scores)]                      # head-summed scores
    if rho == 0: return list(range(T))
    budget = max(1, int(T * (1 - rho)))                         # kvpress's float budget
    chunks = [(a, min(a + c, T)) for a in range(0, T, c)]       # the trailing partial chunk included
    S = [sum(x[a:b]) / (b - a) for a, b in chunks]
    def entropy(v):
        if len(v) == 1: return 0.0
        v = [y - min(min(v), 0.0) for y in v]                   # rebase chunks holding negatives
        p = [y / (sum(v) + 1e-8) for y in v]
        return min(1.0, max(0.0, -sum(q * math.log(q + 1e-8) for q in p) / math.log(len(v))))
    H = [entropy(x[a:b]) for a, b in chunks]
    lower_median = lambda v: sorted(v)[(len(v) - 1) // 2]       # torch.median
    s_med, tau, keep = lower_median(S), lower_median(H), set()
    for i in sorted(range(len(chunks)), key=lambda i: -S[i]):   # decreasing chunk score
        if budget <= 0: break
        a, b = chunks[i]
        n = min(b - a, budget, r if S[i] >= s_med and H[i] < tau else b - a)
        keep.update(sorted(range(a, b), key=lambda t: -x[t])[:n])
        budget -= n
    rest = sorted((t for t in range(T) if t not in keep), key=lambda t: -x[t])
    return sorted(keep | set(rest[:budget]))                    # top-up, then positional order

for line in sys.stdin:
    q = json.loads(line)
    kept = eg_chunkkv(q["scores"], q["compression_ratio"], q["chunk_length"], q["rescue_size"])
    print(json.dumps({"id": q["id"], "kept": kept}), flush=True)
