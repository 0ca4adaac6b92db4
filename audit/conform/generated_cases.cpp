// Generated conform cases: the property suites' selector generators mixed with conform's corner generator.
#include "audit/conform/case_sources.h"
#include "audit/conform/corner_cases.h"
#include "audit/selector_cases.h"

namespace kvaudit::conform {
namespace {

// The protocol carries no median rule or eps: an implementation is judged under the defaults it is
// specified with (torch's lower median, eps 1e-8), so cases drawn with other values are mapped to them.
ConformCase from_selector_case(const audit::SelectorCase& s) {
  ConformCase c;
  c.heads = s.heads();
  c.tokens = s.tokens();
  c.values = audit::flatten(s);
  c.params = s.params;
  c.params.median = MedianRule::Lower;
  c.params.eps = SelectorParams{}.eps;
  return c;
}

}  // namespace

rc::Gen<ConformCase> generated_cases(Method method, Flavour flavour) {
  audit::CaseOptions options;
  options.method = method;
  options.flavour = flavour;
  // Equal weights: the shared generators cover what the property suites cover (long contexts, bf16, 1-8
  // heads, thresholds 0/1); corner_cases adds the dense small-T corners where mutants die fastest.
  return rc::gen::weightedOneOf<ConformCase>(
      {{1, rc::gen::map(audit::gen_selector_case(options), from_selector_case)}, {1, corner_cases(method, flavour)}});
}

}  // namespace kvaudit::conform
