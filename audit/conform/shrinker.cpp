// Greedy descent over Shrinkable candidate trees with the implementation in the loop: generator shrinks first,
// then the concrete shrinker from wherever they stopped.
#include "audit/conform/shrinker.h"

#include "audit/conform/case_sources.h"

namespace kvaudit::conform {

void descend(const rc::Shrinkable<ConformCase>& failing, Judge& judge, int max_queries, ShrinkResult& r) {
  rc::Shrinkable<ConformCase> current = failing;
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
      ConformCase candidate = next->value();
      ++r.candidates_tried;
      Outcome o = judge.run(candidate);
      if (o.error) {
        if (r.protocol_errors++ == 0) r.first_protocol_error = o.error->what();
        continue;
      }
      if (!o.violates()) continue;
      current = *next;
      r.minimal = std::move(candidate);
      r.outcome = std::move(o);
      ++r.steps;
      progressed = true;
      break;
    }
  }
}

ShrinkResult shrink_failure(const rc::Shrinkable<ConformCase>& failing, Outcome outcome, Judge& judge,
                            int max_queries) {
  ShrinkResult r;
  r.minimal = failing.value();
  r.outcome = std::move(outcome);
  descend(failing, judge, max_queries / 2, r);
  r.budget_exhausted = false;  // phase 1's budget is a share, not the end
  int phase1_steps = r.steps;
  std::string origin = r.minimal.origin;
  descend(shrinkable_concrete(r.minimal), judge, max_queries - r.candidates_tried, r);
  r.concrete_steps = r.steps - phase1_steps;
  if (r.minimal.origin.empty()) r.minimal.origin = origin;
  return r;
}

}  // namespace kvaudit::conform
