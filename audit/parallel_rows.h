// Rows of one audit unit run in parallel on the threads the audit runs its units on (audit_runner.cpp).
#pragma once

#include <cstddef>
#include <functional>

namespace kvaudit::audit {

// Calls body(i) for every i in [0, n), as OpenMP tasks of the enclosing parallel region, so that the rows of a
// long unit spread over the threads that shorter units leave idle; outside a parallel region (a unit run on its
// own, a test) the calls run in order on this thread. Each call must write only its own slot i, and the caller
// merges the slots in index order afterwards: the result is then the same for every thread count. Returns when
// every call has finished; the exception of the lowest index that threw, if any, is rethrown then.
void for_each_row(std::size_t n, const std::function<void(std::size_t)>& body);

}  // namespace kvaudit::audit
