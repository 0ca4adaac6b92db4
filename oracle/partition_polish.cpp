// Local search toward R from below on the incumbent's cuts (see partition_polish.h).
#include "oracle/partition_polish.h"

#include <algorithm>
#include <vector>

namespace kvaudit::oracle {

namespace {

struct Move {
  double delta = 0.0;  // H after - H before (double)
  Index a = -1, x = -1, c = -1, y = -1;  // cut a (index into bounds) to x, optionally cut c to y
};

// Change of H when bounds[a] (0 < a < m) moves to x, the other cuts staying.
double single_delta(const IntervalTable& h, const std::vector<Index>& b, Index a, Index x) {
  return h(b[a - 1], x) + h(x, b[a + 1]) - h(b[a - 1], b[a]) - h(b[a], b[a + 1]);
}

Move best_move(const IntervalTable& h, const std::vector<Index>& b, double slack, std::int64_t& work) {
  const Index m = static_cast<Index>(b.size()) - 1;
  Move best;
  auto consider = [&](double d, Index a, Index x, Index c, Index y) {
    ++work;
    if (d > best.delta && d <= slack) best = {d, a, x, c, y};
  };
  // Deltas of every single-cut move, sorted per cut for the pair matching.
  std::vector<std::vector<std::pair<double, Index>>> moves(static_cast<std::size_t>(m));
  for (Index a = 1; a < m; ++a) {
    auto& list = moves[static_cast<std::size_t>(a)];
    for (Index x = b[a - 1] + 1; x < b[a + 1]; ++x) {
      if (x == b[a]) continue;
      const double d = single_delta(h, b, a, x);
      list.push_back({d, x});
      consider(d, a, x, -1, -1);
    }
    std::sort(list.begin(), list.end());
  }
  // Two non-adjacent cuts: the groups they touch are disjoint, so the deltas add.
  for (Index c = 3; c < m; ++c) {
    const auto& right = moves[static_cast<std::size_t>(c)];
    if (right.empty()) continue;
    for (Index a = 1; a + 2 <= c; ++a)
      for (const auto& [da, x] : moves[static_cast<std::size_t>(a)]) {
        // Largest right delta <= slack - da.
        auto it = std::upper_bound(right.begin(), right.end(), std::make_pair(slack - da, Index{-1}),
                                   [](const auto& l, const auto& r) { return l.first < r.first; });
        if (it == right.begin()) continue;
        --it;
        consider(da + it->first, a, x, c, it->second);
      }
  }
  // Two adjacent cuts a, a + 1: three groups change.
  for (Index a = 1; a + 1 < m; ++a) {
    const double before = h(b[a - 1], b[a]) + h(b[a], b[a + 1]) + h(b[a + 1], b[a + 2]);
    for (Index x = b[a - 1] + 1; x < b[a + 2] - 1; ++x)
      for (Index y = x + 1; y < b[a + 2]; ++y) {
        if (x == b[a] || y == b[a + 1]) continue;  // a single move, already counted
        consider(h(b[a - 1], x) + h(x, y) + h(y, b[a + 2]) - before, a, x, a + 1, y);
      }
  }
  return best;
}

}  // namespace

int polish_incumbent(const IntervalTable& h, Incumbent& inc, double R, int max_rounds, std::int64_t max_work) {
  if (!inc.has() || inc.hits_budget()) return 0;
  std::vector<Index> b = inc.bounds();
  if (b.size() < 3) return 0;  // one group: nothing to move
  int taken = 0;
  std::int64_t work = 0;
  for (int round = 0; round < max_rounds && work < max_work; ++round) {
    const double H = h.entropy(b);
    const Move mv = best_move(h, b, R - H, work);
    if (mv.a < 0) break;
    std::vector<Index> next = b;
    next[static_cast<std::size_t>(mv.a)] = mv.x;
    if (mv.c >= 0) next[static_cast<std::size_t>(mv.c)] = mv.y;
    if (!inc.offer(next, h.entropy(next))) break;  // infeasible or not better once certified
    b = std::move(next);
    ++taken;
  }
  return taken;
}

}  // namespace kvaudit::oracle
