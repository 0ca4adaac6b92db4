// Greedy descent over a Shrinkable's candidate tree with the implementation in the loop.
#include "audit/conform/shrinker.h"

namespace kvaudit::conform {

ShrinkResult shrink_failure(const rc::Shrinkable<ConformCase>& failing, Outcome outcome, Judge& judge,
                            int max_queries) {
  ShrinkResult r;
  rc::Shrinkable<ConformCase> current = failing;
  r.minimal = current.value();
  r.outcome = std::move(outcome);
  bool progressed = true;
  while (progressed) {
    progressed = false;
    auto candidates = current.shrinks();
    while (auto next = candidates.next()) {
      if (r.candidates_tried >= max_queries) {
        r.budget_exhausted = true;
        return r;
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
  return r;
}

}  // namespace kvaudit::conform
