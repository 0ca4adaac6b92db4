// OpenMP taskloop over a unit's rows (parallel_rows.h).
#include "audit/parallel_rows.h"

#include <exception>
#include <vector>

namespace kvaudit::audit {

void for_each_row(std::size_t n, const std::function<void(std::size_t)>& body) {
  std::vector<std::exception_ptr> failed(n);
  // One task per row: rows differ in cost by orders of magnitude (a peaked 4k attention row against a flat one),
  // so grain 1 lets idle threads take what is left. The taskloop waits for its tasks (implicit taskgroup); a
  // thread waiting there runs only these tasks (tied-task scheduling), never another unit.
#pragma omp taskloop grainsize(1)
  for (std::size_t i = 0; i < n; ++i) {
    try {
      body(i);
    } catch (...) {
      failed[i] = std::current_exception();
    }
  }
  for (const auto& e : failed)
    if (e) std::rethrow_exception(e);
}

}  // namespace kvaudit::audit
