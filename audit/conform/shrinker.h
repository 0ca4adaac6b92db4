// Shrinks a failing conformance case by walking its rc::Shrinkable, re-querying the implementation for every
// candidate: fewer heads, shorter T, fewer distinct values, simpler parameters -- whatever the generator's
// shrinks offer, in its order (RapidCheck's greedy descent: take the first candidate that still fails).
#pragma once

#include <rapidcheck.h>

#include "audit/conform/judge.h"

namespace kvaudit::conform {

struct ShrinkResult {
  ConformCase minimal;
  Outcome outcome;            // the minimal case's failing outcome (violation)
  int steps = 0;              // accepted shrinks
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

}  // namespace kvaudit::conform
