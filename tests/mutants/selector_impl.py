#!/usr/bin/env python3
"""ChunkKV / EG-ChunkKV over the kvaudit conform protocol (stdlib only), correct or deliberately mutated.

Usage: selector_impl.py [--flavour kvpress|exact] [--mutant NAME]
With no mutant this is a plain transcription of kvpress 0.5.5 (kvpress flavour) or of the seeds (exact
flavour); each mutant changes one rule of docs/specification.md sections 1-3. MUTANTS below lists them with the rule they
break; RIGHT lists implementations that differ from the canonical one in legal ways and must pass.
Float32 arithmetic is emulated by rounding every operation to float32 (torch does the same ops in float32).
"""
import json
import math
import re
import struct
import sys
from fractions import Fraction

EPS = 1e-8
RATIO = re.compile(r'"compression_ratio"\s*:\s*([0-9.eE+-]+)')

# mutant name -> the rule it breaks (kept in sync with tests/unit/conform_mutants_test.cpp)
MUTANTS = {
    "budget_off_by_one": "budget: keeps one token (EG) / one chunk (ChunkKV) more than the float rule",
    "budget_exact": "budget: exact rational budget where kvpress uses the float one",
    "budget_float": "budget: kvpress's float budget where the exact flavour requires the exact one",
    "partial_dropped": "chunking: the trailing partial chunk is not a chunk",
    "partial_merged": "chunking: the trailing partial chunk is merged into the last complete chunk",
    "heads_max": "head reduction: max over heads instead of the sum",
    "heads_first": "head reduction: head 0 only",
    "stat_sum": "statistics: chunk score is the sum, not the mean",
    "median_upper": "statistics: upper median for an even count",
    "median_mean": "statistics: mean of the two middles for an even count",
    "entropy_log2": "statistics: entropy in log2 normalized by ln(n): wrong normalization",
    "entropy_partial_norm": "statistics: the partial chunk's entropy normalized by log(c) instead of log(n_i)",
    "entropy_no_rebase": "statistics: negative chunks not rebased before the entropy",
    "entropy_clamp": "statistics: negative scores clamped to 0 for the entropy instead of rebased",
    "gate_important_strict": "gates: important uses > instead of >=",
    "gate_spiky_le": "gates: spiky uses <= instead of <",
    "walk_ascending": "walk: chunks in increasing score",
    "walk_no_truncate": "walk: a chunk that does not fit is skipped and the walk goes on (no break/truncation)",
    "rescue_plus_one": "rescue: keeps rescue_size + 1 tokens of a spiky chunk",
    "rescue_ignored": "rescue: spiky chunks are kept whole",
    "rescue_lowest": "rescue: keeps the lowest-scoring tokens of a spiky chunk",
    "topup_missing": "top-up: leftover budget is not spent",
    "topup_lowest": "top-up: adds the lowest-scoring leftover tokens",
    "unsorted": "order: kept positions in decreasing order",
    "fallback_shared": "ChunkKV fallback: one head-summed top-k instead of kvpress's per-head top-k",
    "fallback_per_head": "ChunkKV fallback (exact flavour): each head's own top-k where one shared top-L is required",
}
RIGHT = {
    "ties_high": "ties broken toward the higher index everywhere",
    "float64": "all statistics in float64 instead of float32",
}


def f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


class Impl:
    def __init__(self, flavour, mutant):
        self.flavour = flavour
        self.m = mutant
        self.r = (lambda v: v) if mutant == "float64" else f32  # rounding applied after every operation

    def has(self, name):
        return self.m == name

    # ---- ordering helpers: ties toward the lower index unless the ties_high variant is running ----
    def order_desc(self, values, idx):
        sign = -1 if self.has("ties_high") else 1
        return sorted(idx, key=lambda i: (-values[i], sign * i))

    def topk(self, values, idx, k):
        return self.order_desc(values, idx)[:k]

    # ---- budgets ----
    def budget(self, n, rho_text):
        exact = self.flavour == "exact"
        if self.has("budget_exact"):
            exact = True
        if self.has("budget_float"):
            exact = False
        if exact:
            b = max(1, math.floor((1 - Fraction(rho_text)) * n))
        else:
            b = max(1, int(n * (1 - float(rho_text))))
        return b + 1 if self.has("budget_off_by_one") else b

    def head_sum(self, scores):
        heads, T = len(scores), len(scores[0])
        if self.has("heads_first"):
            return [self.r(scores[0][t]) for t in range(T)]
        out = []
        for t in range(T):
            acc = self.r(scores[0][t])
            for h in range(1, heads):
                acc = max(acc, scores[h][t]) if self.has("heads_max") else self.r(acc + scores[h][t])
            out.append(acc)
        return out

    def mean(self, xs):
        acc = 0.0
        for v in xs:
            acc = self.r(acc + v)
        return acc if self.has("stat_sum") else self.r(acc / len(xs))

    def bounds(self, T, c):
        n_complete, rem = T // c, T % c
        b = [(i * c, i * c + c) for i in range(n_complete)]
        if rem:
            if self.has("partial_dropped"):
                pass
            elif self.has("partial_merged") and b:
                b[-1] = (b[-1][0], T)
            else:
                b.append((n_complete * c, T))
        return b

    def median(self, xs):
        s = sorted(xs)
        n = len(s)
        if n % 2 == 1:
            return s[n // 2]
        if self.has("median_upper"):
            return s[n // 2]
        if self.has("median_mean"):
            return (s[n // 2 - 1] + s[n // 2]) / 2
        return s[n // 2 - 1]

    def entropy(self, xs, c):
        n = len(xs)
        if n == 1:
            return 0.0
        lo = min(xs)
        if self.has("entropy_clamp"):
            xs = [max(0.0, v) for v in xs]
        elif lo < 0 and not self.has("entropy_no_rebase"):
            xs = [self.r(v - lo) for v in xs]
        total = 0.0
        for v in xs:
            total = self.r(total + v)
        h = 0.0
        for v in xs:
            p = self.r(v / self.r(total + EPS))
            if p + EPS <= 0:
                return float("nan")  # torch: log of a negative number is nan
            lg = math.log2(p + EPS) if self.has("entropy_log2") else math.log(self.r(p + EPS))
            h = self.r(h - self.r(p * self.r(lg)))
        norm = math.log(c if self.has("entropy_partial_norm") else n)
        return min(1.0, max(0.0, self.r(h / norm)))

    # ---- EG-ChunkKV (docs/specification.md section 3) ----
    def eg_chunkkv(self, scores, rho_text, c, r, tau):
        T = len(scores[0])
        if float(rho_text) == 0 and self.flavour == "kvpress":
            return list(range(T))
        x = self.head_sum(scores)
        if self.flavour == "exact":
            x = [max(0.0, v) for v in x]
        budget = self.budget(T, rho_text)
        if budget >= T:
            return list(range(T))
        bounds = self.bounds(T, c)
        S = [self.mean(x[a:b]) for a, b in bounds]
        H = [self.entropy(x[a:b], c) for a, b in bounds]
        if not bounds:  # partial_dropped with T < c: no chunk at all, everything comes from the top-up
            return sorted(self.topk(x, range(T), budget))
        med_s = self.median(S)
        if tau is None:
            tau = float("nan") if any(math.isnan(h) for h in H) else self.median(H)
        important = [(s > med_s) if self.has("gate_important_strict") else (s >= med_s) for s in S]
        spiky = [(h <= tau) if self.has("gate_spiky_le") else (h < tau) for h in H]
        keep = set()
        order = self.order_desc(S, range(len(bounds)))
        if self.has("walk_ascending"):
            order = list(reversed(order))
        for i in order:
            if budget <= 0:
                break
            a, b = bounds[i]
            n_i = b - a
            if self.has("walk_no_truncate") and n_i > budget and not (important[i] and spiky[i]):
                continue
            n_kept = min(n_i, budget)
            if important[i] and spiky[i] and not self.has("rescue_ignored"):
                n_kept = min(n_kept, r + 1 if self.has("rescue_plus_one") else r)
            if n_kept == n_i:
                keep.update(range(a, b))
            elif important[i] and spiky[i] and self.has("rescue_lowest"):
                keep.update(sorted(range(a, b), key=lambda t: (x[t], t))[:n_kept])
            else:
                keep.update(self.topk(x, range(a, b), n_kept))
            budget -= n_kept
        if budget > 0 and not self.has("topup_missing"):
            left = [t for t in range(T) if t not in keep]
            if self.has("topup_lowest"):
                keep.update(sorted(left, key=lambda t: (x[t], t))[:budget])
            else:
                keep.update(self.topk(x, left, budget))
        return sorted(keep)

    # ---- ChunkKV (docs/specification.md section 2) ----
    def chunkkv(self, scores, rho_text, c):
        T = len(scores[0])
        if float(rho_text) == 0:
            return list(range(T))
        if T // c == 0:
            k = self.budget(T, rho_text)
            if self.has("budget_off_by_one"):
                k -= 1  # the off-by-one mutant targets the chunk count; the fallback keeps the real k
            # kvpress: the inner ScorerPress's per-head top-k. The exact flavour keeps one head-summed top-L.
            if self.has("fallback_shared") or (self.flavour == "exact" and not self.has("fallback_per_head")):
                x = self.head_sum(scores)
                return sorted(self.topk(x, range(T), k))
            return [sorted(self.topk(row, range(T), k)) for row in scores]
        x = self.head_sum(scores)
        bounds = self.bounds(T, c)
        S = [self.mean(x[a:b]) for a, b in bounds]
        n_keep = self.budget(len(bounds), rho_text)
        order = self.order_desc(S, range(len(bounds)))
        if self.has("walk_ascending"):
            order = list(reversed(order))
        keep = []
        for i in order[:n_keep]:
            keep.extend(range(*bounds[i]))
        return sorted(keep)


def main():
    args = sys.argv[1:]
    flavour, mutant = "kvpress", None
    while args:
        flag, value, args = args[0], args[1], args[2:]
        if flag == "--flavour":
            flavour = value
        elif flag == "--mutant":
            mutant = value
        else:
            sys.exit("unknown flag " + flag)
    if mutant is not None and mutant not in MUTANTS and mutant not in RIGHT:
        sys.exit("unknown mutant " + mutant)
    impl = Impl(flavour, mutant)
    for line in sys.stdin:
        req = json.loads(line)
        rho = RATIO.search(line).group(1)  # the decimal text as sent: the exact budget needs it unrounded
        if req["method"] == "eg-chunkkv":
            kept = impl.eg_chunkkv(req["scores"], rho, req["chunk_length"], req["rescue_size"], req["entropy_threshold"])
        else:
            kept = impl.chunkkv(req["scores"], rho, req["chunk_length"])
        if impl.has("unsorted") and kept and not isinstance(kept[0], list):
            kept = list(reversed(kept))
        print(json.dumps({"id": req["id"], "kept": kept}), flush=True)


if __name__ == "__main__":
    main()
