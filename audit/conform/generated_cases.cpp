// Generated conform cases: the property suites' selector generators mixed with conform's corner generator.
#include "audit/conform/case_sources.h"
#include "audit/conform/corner_cases.h"

namespace kvaudit::conform {

rc::Gen<ConformCase> generated_cases(Method method, Flavour flavour) { return corner_cases(method, flavour); }

}  // namespace kvaudit::conform
