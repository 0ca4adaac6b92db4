// Meet-in-the-middle exact solver for a fixed number of groups (see partition_mitm.h).
#include "oracle/partition_mitm.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kvaudit::oracle {

namespace {

// Enumerates the ways to cut (from, to] into `groups` groups in lexicographic order, iteratively (an
// explicit cut stack). keep(d, c, acc) decides, once cut d sits at c with acc the entropy of the groups so
// far, whether anything below is worth visiting; emit(sum, cuts) receives every complete part.
// Returns false when the budget ran out.
struct Budget {
  std::int64_t work = 0, max_work = 0;
  std::chrono::steady_clock::time_point deadline;
  bool spent() {  // the clock is read once per 2^16 units of work
    return ++work > max_work || ((work & 0xffff) == 0 && std::chrono::steady_clock::now() > deadline);
  }
};

template <class Keep, class Emit>
bool for_each_part(const IntervalTable& h, Index from, Index to, Index groups, std::vector<Index>& cuts,
                   std::vector<double>& acc, Budget& budget, const Keep& keep, const Emit& emit) {
  const Index k = groups - 1;  // interior cuts
  cuts.assign(static_cast<std::size_t>(k), 0);
  if (k == 0) {
    if (budget.spent()) return false;
    emit(h(from, to), cuts);
    return true;
  }
  acc.assign(static_cast<std::size_t>(k) + 1, 0.0);  // acc[d]: entropy of the first d groups
  Index d = 0;
  cuts[0] = from;
  while (d >= 0) {
    const Index prev = d == 0 ? from : cuts[static_cast<std::size_t>(d) - 1];
    Index& c = cuts[static_cast<std::size_t>(d)];
    c = std::max(c + 1, prev + 1);
    if (c > to - (k - d)) {  // no room left for the remaining cuts: back up
      c = 0;
      --d;
      continue;
    }
    if (budget.spent()) return false;
    const double a = acc[static_cast<std::size_t>(d)] + h(prev, c);
    if (!keep(d, c, a)) continue;
    acc[static_cast<std::size_t>(d) + 1] = a;
    if (d + 1 == k) {
      emit(a + h(c, to), cuts);
    } else {
      ++d;
      cuts[static_cast<std::size_t>(d)] = c;  // the next cut starts after this one
    }
  }
  return true;
}

}  // namespace

MitmStats solve_mitm(const IntervalTable& h, const SuffixBounds& suffix, Incumbent& inc, Index n, Index m, double R,
                     std::int64_t max_work, std::chrono::steady_clock::time_point deadline) {
  MitmStats stats;
  Budget budget{0, max_work, deadline};
  const Index j = m / 2, rj = m - j;  // left groups cover (0, t], right groups (t, n]
  const double w = 2.0 * entropy_error_bound(std::max(std::fabs(R), 1.0), m) + 1e-300;
  const double inf = std::numeric_limits<double>::infinity();
  auto floor_value = [&] { return inc.has() ? inc.lower() - 2.0 * w : -inf; };  // worth reaching: > this

  // Largest / smallest entropy of (0, t] in exactly j groups (the left side's range for each t).
  std::vector<double> pre_up(static_cast<std::size_t>(n + 1) * (j + 1), -inf), pre_lo(pre_up.size(), inf);
  auto at = [&](Index t, Index k) { return static_cast<std::size_t>(t * (j + 1) + k); };
  pre_up[at(0, 0)] = pre_lo[at(0, 0)] = 0.0;
  for (Index k = 1; k <= j; ++k)
    for (Index t = k; t <= n; ++t)
      for (Index s = k - 1; s < t; ++s) {
        if (pre_up[at(s, k - 1)] == -inf) continue;
        pre_up[at(t, k)] = std::max(pre_up[at(t, k)], pre_up[at(s, k - 1)] + h(s, t));
        pre_lo[at(t, k)] = std::min(pre_lo[at(t, k)], pre_lo[at(s, k - 1)] + h(s, t));
      }

  std::vector<Index> lcuts, rcuts, bounds;
  std::vector<double> lacc, racc;
  struct Right {
    double sum;
    std::size_t at;  // first cut's offset into right_cuts
  };
  std::vector<Right> right;
  std::vector<Index> right_cuts;
  for (Index t = j; t <= n - rj; ++t) {
    const double l_up = pre_up[at(t, j)], l_lo = pre_lo[at(t, j)];
    if (l_lo + suffix.lower(t, rj) > R + 2.0 * w || l_up + suffix.upper(t, rj) < floor_value()) continue;
    right.clear();
    right_cuts.clear();
    // Right parts: a prefix at cut d (position c) continues over (c, n] with rj - d - 1 groups.
    const bool right_done = for_each_part(
        h, t, n, rj, rcuts, racc, budget,
        [&](Index d, Index c, double a) {
          const Index left_groups = rj - d - 1;
          return a + suffix.lower(c, left_groups) + l_lo <= R + 2.0 * w &&
                 a + suffix.upper(c, left_groups) + l_up >= floor_value();
        },
        [&](double b, const std::vector<Index>& cuts) {
          if (b + l_lo > R + 2.0 * w || b + l_up < floor_value()) return;
          right.push_back({b, right_cuts.size()});
          right_cuts.insert(right_cuts.end(), cuts.begin(), cuts.end());
        });
    stats.work = budget.work;
    if (!right_done) return stats;
    if (right.empty()) continue;
    std::sort(right.begin(), right.end(), [](const Right& a, const Right& b) { return a.sum < b.sum; });
    const double r_lo = right.front().sum, r_up = right.back().sum;
    // Left parts: a prefix at cut d (position c) continues over (c, t] with j - d - 1 groups, then right.
    const bool left_done = for_each_part(
        h, 0, t, j, lcuts, lacc, budget,
        [&](Index d, Index c, double a) {
          const Index left_groups = j - d - 1;  // groups still to place in (c, t]
          // (c, t] in left_groups groups lies within the suffix range of (c, n] minus the right part's range.
          return a + suffix.lower(c, left_groups + rj) <= R + 2.0 * w &&
                 a + suffix.upper(c, left_groups + rj) >= floor_value();
        },
        [&](double a, const std::vector<Index>& cuts) {
          if (a + r_lo > R + 2.0 * w || a + r_up < floor_value()) return;
          // Candidates a + b in (incumbent - w, R + w], from the largest b downward.
          auto it = std::upper_bound(right.begin(), right.end(), R - a + w,
                                     [](double v, const Right& r) { return v < r.sum; });
          while (it != right.begin()) {
            --it;
            if (inc.has() && a + it->sum < inc.lower() - w) break;
            bounds.assign(1, 0);
            bounds.insert(bounds.end(), cuts.begin(), cuts.end());
            bounds.push_back(t);
            const auto first = right_cuts.begin() + static_cast<std::ptrdiff_t>(it->at);
            bounds.insert(bounds.end(), first, first + (rj - 1));
            bounds.push_back(n);
            ++stats.offers;
            inc.offer(bounds, h.entropy(bounds));
          }
        });
    stats.work = budget.work;
    if (!left_done) return stats;
  }
  stats.complete = true;
  return stats;
}

}  // namespace kvaudit::oracle
