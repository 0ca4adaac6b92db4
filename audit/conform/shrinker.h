// Shrinks a failing conformance case, re-querying the implementation for every candidate, in two phases:
//  1. walk the case's own rc::Shrinkable (whatever the generator's shrinks offer, in its order: RapidCheck's
//     greedy descent, taking the first candidate that still fails), with half the query budget;
//  2. continue from that minimum with shrinkable_concrete (drop a head, keep a prefix or suffix, quantize the
//     values, simplify the parameters), which also shrinks dump rows and replayed requests and makes big cuts
//     (halving T) that element-wise generator shrinks need thousands of queries for.
#pragma once

#include <rapidcheck.h>

#include "audit/conform/judge.h"

namespace kvaudit::conform {

struct ShrinkResult {
  ConformCase minimal;
  Outcome outcome;            // the minimal case's failing outcome (violation)
  int steps = 0;              // accepted shrinks (both phases)
  int concrete_steps = 0;     // of which in phase 2
  int candidates_tried = 0;   // queries sent while shrinking
  int protocol_errors = 0;    // candidates on which the implementation crashed / hung / answered garbage
  std::string first_protocol_error;
  bool budget_exhausted = false;  // stopped at max_queries, the result may not be minimal
};

// `failing` holds a case whose `outcome` violates. A candidate is accepted when it also violates (any rule:
// the minimal case reports its own rule). Candidates that are inconclusive, invalid or that make the
// implementation fail the protocol are not followed; the process restarts on the next query.
ShrinkResult shrink_failure(const rc::Shrinkable<ConformCase>& failing, Outcome outcome, Judge& judge,
                            int max_queries = 4000);

// Phase 1 only: the greedy descent over `failing`'s tree with at most `max_queries` queries, accumulating
// into `r` (whose minimal / outcome hold the current failure).
void descend(const rc::Shrinkable<ConformCase>& failing, Judge& judge, int max_queries, ShrinkResult& r);

}  // namespace kvaudit::conform
