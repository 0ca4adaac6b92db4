// Incumbent polish for the exact partition solver: moves cuts of the best feasible partition found so far to
// bring H up toward R from below. It only ever offers candidates to the Incumbent, which decides feasibility
// and improvement with certified comparisons, so it can tighten the solver's bracket and its pruning but
// never change what is certified.
#pragma once

#include <cstdint>

#include "oracle/partition_incumbent.h"
#include "oracle/partition_interval_table.h"

namespace kvaudit::oracle {

// Up to `max_rounds` rounds; each applies the best H-raising move that stays <= R (in double) among every
// single-cut move, every move of two adjacent cuts, and every move of two non-adjacent cuts (matched in
// O(L log L) per pair through a sorted list of one cut's deltas). Stops when no move raises H or the
// Incumbent refuses the candidate, or once the moves examined exceed `max_work`: a round costs about m n log n
// (m cuts over n positions, ~1e7 at n = 2048, m = 512), so the round count alone does not bound the time at
// the seed's sizes; the default is never reached at the audit's n = 64. Returns the number of improvements taken.
int polish_incumbent(const IntervalTable& h, Incumbent& inc, double R, int max_rounds,
                     std::int64_t max_work = 100'000'000);

}  // namespace kvaudit::oracle
