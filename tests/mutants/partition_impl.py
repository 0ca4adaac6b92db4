#!/usr/bin/env python3
"""Entropy-budgeted contiguous partitions over the kvaudit conform protocol (stdlib only), exact, heuristic or
deliberately wrong.

Usage: partition_impl.py [--mutant NAME]
With no mutant: exhaustive enumeration with exact masses (Fraction) and 80-digit entropies (Decimal), as
tools/adapters/partition_adapter.py. MUTANTS break one rule (the rule kvaudit must name is in the test);
RIGHT lists implementations that are right in unusual ways and must pass (under the claim the test gives).
"""
import itertools
import json
import sys
from decimal import Decimal, getcontext
from fractions import Fraction

getcontext().prec = 80
LN2, TIE = Decimal(2).ln(), Decimal("1e-60")

MUTANTS = {
    "greedy_claimed_exact": "optimality: the greedy heuristic run under --claim exact",
    "over_budget": "budget: the max-entropy partition whatever R is",
    "groups_plus_one": "groups: the right answer with its last group split in two (one group too many)",
    "strict_budget": "feasibility: H < R instead of H <= R (exact ties at R refused)",
    "false_infeasible": "infeasibility: gives up when the best partition is more than 0.25 bits below R",
    "boundaries_full": "boundaries: sends b_0 = 0 and b_m = n as well",
    "boundaries_descending": "boundaries: in decreasing order",
}
RIGHT = {
    "ties_high": "exact, among tied optima the last one enumerated",
    "greedy": "the greedy heuristic with an exact fallback (run under --claim heuristic): valid, within R",
}


def h(q):
    if q == 0:
        return Decimal(0)
    d = Decimal(q.numerator) / Decimal(q.denominator)
    return -d * d.ln() / LN2


class Problem:
    def __init__(self, p, R):
        self.n = len(p)
        self.prefix = [Fraction(0)]
        for v in p:
            self.prefix.append(self.prefix[-1] + Fraction(v))
        self.H = {}
        self.R = Decimal(R)

    def h(self, a, b):
        if (a, b) not in self.H:
            self.H[a, b] = h(self.prefix[b] - self.prefix[a])
        return self.H[a, b]

    def entropy(self, cuts):
        b = [0] + list(cuts) + [self.n]
        return sum(self.h(b[i], b[i + 1]) for i in range(len(b) - 1))


def exhaustive(P, m, mutant):
    best = None
    for k in [m] if m else range(1, P.n + 1):
        for cuts in itertools.combinations(range(1, P.n), k - 1):
            e = P.entropy(cuts)
            feasible = e < P.R - TIE if mutant == "strict_budget" else e <= P.R + TIE
            if mutant == "over_budget":
                feasible = True
            better = best is None or (e >= best[0] - TIE if mutant == "ties_high" else e > best[0] + TIE)
            if feasible and better:
                best = (e, list(cuts))
    return best


def greedy(P, m):
    """Singletons; merge the adjacent pair losing the least entropy while there are more than m groups (fixed
    m) or H > R (free form); if the result is above R, fall back to the exact minimum-entropy partition."""
    cuts = list(range(1, P.n))
    target = m if m else 1
    while len(cuts) + 1 > target and (m or P.entropy(cuts) > P.R):
        i = min(range(len(cuts)), key=lambda j: P.entropy(cuts) - P.entropy(cuts[:j] + cuts[j + 1:]))
        cuts = cuts[:i] + cuts[i + 1:]
    if P.entropy(cuts) <= P.R + TIE:
        return cuts
    low = None
    for c in itertools.combinations(range(1, P.n), (m or 1) - 1):
        if low is None or P.entropy(c) < low[0]:
            low = (P.entropy(c), list(c))
    return low[1] if low[0] <= P.R + TIE else None


def answer(q, mutant):
    P, m = Problem(q["probs"], q["entropy_budget"]), q["groups"]
    if mutant in ("greedy", "greedy_claimed_exact"):
        cuts = greedy(P, m)
    else:
        best = exhaustive(P, m, mutant)
        cuts = None if best is None else best[1]
        if mutant == "false_infeasible" and best is not None and best[0] < P.R - Decimal("0.25"):
            cuts = None
    if cuts is None:
        return {"id": q["id"], "infeasible": True}
    if mutant == "groups_plus_one" and (cuts[-1] if cuts else 0) < P.n - 1:
        cuts = cuts + [P.n - 1]
    if mutant == "boundaries_full":
        cuts = [0] + cuts + [P.n]
    if mutant == "boundaries_descending":
        cuts = sorted(cuts, reverse=True)
    return {"id": q["id"], "boundaries": cuts}


def main():
    mutant = sys.argv[sys.argv.index("--mutant") + 1] if "--mutant" in sys.argv else ""
    if mutant and mutant not in MUTANTS and mutant not in RIGHT:
        sys.exit("unknown mutant " + mutant)
    for line in sys.stdin:
        print(json.dumps(answer(json.loads(line), mutant)), flush=True)


if __name__ == "__main__":
    main()
