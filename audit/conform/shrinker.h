// Shrinks a failing conformance case, re-querying the implementation for every candidate, in two phases:
//  1. walk the case's own rc::Shrinkable (whatever the generator's shrinks offer, in its order: RapidCheck's
//     greedy descent, taking the first candidate that still fails), with half the query budget;
//  2. continue from that minimum with the family's concrete shrinker (drop a head or a group, keep a prefix or
//     suffix, quantize the values, simplify the parameters), which also shrinks dump rows and replayed
//     requests and makes big cuts that element-wise generator shrinks need thousands of queries for.
// Written once over the family interface (judge.h). No candidate ever grows past the family's --max-size:
// the generators and the concrete shrinkers only offer smaller cases.
#pragma once

#include <functional>
#include <string>

#include <rapidcheck.h>

#include "audit/conform/judge.h"

namespace kvaudit::conform {

template <class Case>
struct ShrinkResult {
  Case minimal;
  Outcome outcome;            // the minimal case's failing outcome
  int steps = 0;              // accepted shrinks (both phases)
  int concrete_steps = 0;     // of which in phase 2
  int candidates_tried = 0;   // queries sent while shrinking
  int protocol_errors = 0;    // candidates on which the implementation crashed / hung / answered garbage
  std::string first_protocol_error;
  bool budget_exhausted = false;  // stopped at max_queries, the result may not be minimal
};

// Which outcomes still count as "failing": the driver uses "violates the same rule as the first failure";
// the heuristic partition report shrinks its worst case with "certified suboptimal" instead.
using FailPredicate = std::function<bool(const Outcome&)>;
inline bool is_violation(const Outcome& o) { return o.violates(); }

// Phase 1 only: the greedy descent over `failing`'s tree with at most `max_queries` queries, accumulating
// into `r` (whose minimal / outcome hold the current failure). Candidates that are inconclusive, invalid or
// that make the implementation fail the protocol are not followed; the process restarts on the next query.
template <class F>
void descend(const rc::Shrinkable<typename F::Case>& failing, Judge<F>& judge, int max_queries,
             ShrinkResult<typename F::Case>& r, const FailPredicate& fails) {
  rc::Shrinkable<typename F::Case> current = failing;
  const int stop_at = r.candidates_tried + max_queries;
  bool progressed = true;
  while (progressed) {
    progressed = false;
    auto candidates = current.shrinks();
    while (auto next = candidates.next()) {
      if (r.candidates_tried >= stop_at) {
        r.budget_exhausted = true;
        return;
      }
      typename F::Case candidate = next->value();
      ++r.candidates_tried;
      Outcome o = judge.run(candidate);
      if (o.error) {
        if (r.protocol_errors++ == 0) r.first_protocol_error = o.error->what();
        continue;
      }
      if (!fails(o)) continue;
      current = *next;
      r.minimal = std::move(candidate);
      r.outcome = std::move(o);
      ++r.steps;
      progressed = true;
      break;
    }
  }
}

// `failing` holds a case whose `outcome` fails; both phases, max_queries in all.
template <class F>
ShrinkResult<typename F::Case> shrink_failure(const rc::Shrinkable<typename F::Case>& failing, Outcome outcome,
                                              Judge<F>& judge, int max_queries = 4000,
                                              const FailPredicate& fails = is_violation) {
  ShrinkResult<typename F::Case> r;
  r.minimal = failing.value();
  r.outcome = std::move(outcome);
  descend(failing, judge, max_queries / 2, r, fails);
  r.budget_exhausted = false;  // phase 1's budget is a share, not the end
  const int phase1_steps = r.steps;
  descend(judge.family().concrete(r.minimal), judge, max_queries - r.candidates_tried, r, fails);
  r.concrete_steps = r.steps - phase1_steps;
  return r;
}

}  // namespace kvaudit::conform
