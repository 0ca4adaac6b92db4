#!/usr/bin/env python3
"""A complete exact entropy-budgeted contiguous partition (docs/specification.md section 4) serving `kvaudit conform --method
partition --claim exact`, stdlib only: exhaustive enumeration (run it with --max-size 12 or so) with exact
masses (Fraction) and 80-digit entropies (Decimal); differences below 1e-60 bits count as ties."""
import itertools, json, sys
from decimal import Decimal, getcontext
from fractions import Fraction

getcontext().prec = 80
LN2, TIE = Decimal(2).ln(), Decimal("1e-60")

def h(q):                                                       # -q log2 q, 0 log 0 = 0
    if q == 0: return Decimal(0)
    d = Decimal(q.numerator) / Decimal(q.denominator)
    return -d * d.ln() / LN2

def partition(p, R, m):
    n = len(p)
    prefix = [Fraction(0)]
    for v in p: prefix.append(prefix[-1] + Fraction(v))        # exact sums of the doubles sent
    H = {(a, b): h(prefix[b] - prefix[a]) for a in range(n) for b in range(a + 1, n + 1)}
    R = Decimal(R)                                              # exact value of the double
    best = None
    for k in ([m] if m else range(1, n + 1)):                   # groups: fixed, or any number (free form)
        for cuts in itertools.combinations(range(1, n), k - 1):
            b = (0,) + cuts + (n,)
            e = sum(H[b[i], b[i + 1]] for i in range(k))
            if e <= R + TIE and (best is None or e > best[0] + TIE):
                best = (e, list(cuts))
    return best and best[1]

for line in sys.stdin:
    q = json.loads(line)
    cuts = partition(q["probs"], q["entropy_budget"], q["groups"])
    print(json.dumps({"id": q["id"], "infeasible": True} if cuts is None else {"id": q["id"], "boundaries": cuts}),
          flush=True)
