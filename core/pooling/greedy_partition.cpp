// Greedy contiguous merging under an entropy budget (reading documented in greedy_partition.h).
#include "core/pooling/greedy_partition.h"

#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <utility>

#include "core/exact/log_linear_sign.h"

namespace kvaudit::pooling {

namespace {
double h(double x) { return x > 0.0 ? -x * std::log2(x) : 0.0; }
double delta(double a, double b) { return std::max(0.0, h(a) + h(b) - h(a + b)); }

// Blocks form a linked list addressed by their first position; `key` holds each left block's current
// candidate (Delta with its right neighbour).
struct State {
  std::vector<double> mass;
  std::vector<Index> next, prev;  // -1 at the ends
  std::vector<double> d;          // d[left] = Delta(left, next[left]) when next[left] >= 0
  std::set<std::pair<double, Index>> cands;
  // Triple reductions h(A)+h(B)+h(C)-h(A+B+C) keyed by A's position: lets rule (c) see in O(1) that no
  // pair of merges can reach the budget, so descent steps cost O(log n) instead of a full scan.
  std::vector<double> t;
  std::set<std::pair<double, Index>> triples;
  double H = 0.0;

  void add_triple(Index a) {
    if (a < 0 || next[a] < 0 || next[next[a]] < 0) return;
    const Index b = next[a], c = next[b];
    t[a] = h(mass[a]) + h(mass[b]) + h(mass[c]) - h(mass[a] + mass[b] + mass[c]);
    triples.insert({t[a], a});
  }
  void remove_triple(Index a) {
    if (a < 0 || next[a] < 0 || next[next[a]] < 0) return;
    triples.erase({t[a], a});
  }
  // Upper bound on what any two merges can remove: two largest Deltas, or the largest triple.
  double best_two_step() const {
    double two = 0.0;
    auto it = cands.rbegin();
    if (it != cands.rend()) {
      two = it->first;
      if (++it != cands.rend()) two += it->first;
    }
    return std::max(two, triples.empty() ? 0.0 : triples.rbegin()->first);
  }

  void add(Index left) {
    if (left < 0 || next[left] < 0) return;
    d[left] = delta(mass[left], mass[next[left]]);
    cands.insert({d[left], left});
  }
  void remove(Index left) {
    if (left < 0 || next[left] < 0) return;
    cands.erase({d[left], left});
  }
  void merge(Index left) {
    const Index right = next[left];
    const Index p1 = prev[left], p2 = p1 >= 0 ? prev[p1] : -1;
    for (Index a : {p2, p1, left, right}) remove_triple(a);
    remove(prev[left]);
    remove(left);
    remove(right);
    H -= d[left];
    mass[left] += mass[right];
    next[left] = next[right];
    if (next[right] >= 0) prev[next[right]] = left;
    add(prev[left]);
    add(left);
    for (Index a : {p2, p1, left}) add_triple(a);
  }
  // H and total mass summed afresh over the blocks (the running H accumulates one rounding per merge).
  std::pair<double, double> fresh_entropy() const {
    double H_fresh = 0.0, Q = 0.0;
    for (Index i = 0; i >= 0; i = next[i]) H_fresh += h(mass[i]), Q += mass[i];
    return {H_fresh, Q};
  }
  // Exactly: is H <= R on the rational block masses (sums of the given doubles)? Block i covers [i, next[i]).
  bool exact_within_budget(std::span<const double> p, double R) const {
    exact::LogLinearForm x;  // H - R
    for (Index i = 0; i >= 0; i = next[i]) {
      exact::Rational q = 0;
      for (Index t = i; t < (next[i] >= 0 ? next[i] : static_cast<Index>(p.size())); ++t) q += exact::Rational(p[t]);
      x.add_entropy_term(q, +1);
    }
    x.add_constant(-exact::Rational(R));
    return x.sign() <= 0;
  }
  // Smallest candidate Delta >= x with the lowest position among equals.
  std::set<std::pair<double, Index>>::const_iterator at_least(double x) const {
    return cands.lower_bound({x, std::numeric_limits<Index>::min()});
  }
};

// Rule (c): the pair of merges with the smallest total reduction >= need; returns the merge to apply now
// (the pair's larger-Delta member), or -1 when no pair reaches.
Index lookahead(const State& s, double need) {
  double best_sum = std::numeric_limits<double>::infinity();
  Index best_first = -1, best_low = std::numeric_limits<Index>::max();
  auto consider = [&](double sum, Index first, Index low) {
    if (sum < need) return;
    if (sum < best_sum || (sum == best_sum && low < best_low)) best_sum = sum, best_first = first, best_low = low;
  };
  // Disjoint pairs: for each j the smallest compatible Delta_k >= need - Delta_j (k not sharing a block).
  for (const auto& [dj, j] : s.cands) {
    for (auto it = s.at_least(need - dj); it != s.cands.end(); ++it) {
      const Index k = it->second;
      if (k == j || k == s.prev[j] || k == s.next[j]) continue;
      const Index first = dj >= it->first ? j : k;
      consider(dj + it->first, first, std::min(j, k));
      break;
    }
  }
  // Triples A|B|C -> ABC: the smallest reduction >= need.
  for (auto it = s.triples.lower_bound({need, std::numeric_limits<Index>::min()}); it != s.triples.end(); ++it) {
    const Index j = it->second, b = s.next[j];
    consider(it->first, s.d[j] >= s.d[b] ? j : b, j);
  }
  return best_first;
}
}  // namespace

double final_error_bound(double entropy, double total_mass, Index n, Index groups) {
  const double nn = static_cast<double>(n), g = static_cast<double>(groups);
  return std::ldexp(1.0, -52) * ((nn + g + 8.0) * entropy + 2.0 * (nn + 2.0) * total_mass);
}

GreedyResult greedy_partition(std::span<const double> p, std::optional<Index> groups, double R) {
  const Index n = static_cast<Index>(p.size());
  if (n < 1) throw std::invalid_argument("empty probability vector");
  if (groups && (*groups < 1 || *groups > n)) throw std::invalid_argument("groups must be in [1, n]");
  State s;
  s.mass.assign(p.begin(), p.end());
  s.next.resize(n);
  s.prev.resize(n);
  s.d.assign(n, 0.0);
  s.t.assign(n, 0.0);
  for (Index i = 0; i < n; ++i) {
    if (!std::isfinite(p[i]) || p[i] < 0) throw std::invalid_argument("probabilities must be finite and >= 0");
    s.next[i] = i + 1 < n ? i + 1 : -1;
    s.prev[i] = i - 1;
    s.H += h(p[i]);
  }
  for (Index i = 0; i + 1 < n; ++i) s.add(i);
  for (Index i = 0; i + 2 < n; ++i) s.add_triple(i);
  GreedyResult out;
  const Index merges = groups ? n - *groups : n - 1;
  // H <= R for the current blocks, exactly: double when clear of the rounding bound, else the exact sign.
  auto within_budget = [&](Index blocks, bool* undecided = nullptr) {
    const auto [H_fresh, Q] = s.fresh_entropy();
    const double bound = final_error_bound(H_fresh, Q, n, blocks);
    if (undecided) *undecided = std::fabs(H_fresh - R) <= bound;
    if (H_fresh + bound <= R) return true;
    if (H_fresh - bound > R) return false;
    ++out.exact_decisions;
    return s.exact_within_budget(p, R);
  };
  for (Index step = 0; step < merges; ++step) {
    const double need = s.H - R;
    // Free form: stop once within budget (the fresh sum runs only when the running H says so).
    if (!groups && need <= 0 && within_budget(n - step)) break;
    Index pick = -1;
    if (need <= 0) {
      pick = s.cands.begin()->second;  // (a)
    } else if (auto it = s.at_least(need); it != s.cands.end()) {
      pick = it->second;  // (b)
    } else {
      ++out.lookahead_steps;  // (c)
      // Two largest Deltas over-estimate disjoint pairs (they may share a block), so the skip is safe.
      pick = s.best_two_step() >= need ? lookahead(s, need) : -1;
      if (pick < 0) {
        ++out.descent_steps;
        pick = s.at_least(s.cands.rbegin()->first)->second;
      }
    }
    s.merge(pick);
    ++out.merges;
  }
  for (Index i = s.next[0]; i >= 0; i = s.next[i]) out.cuts.push_back(i);
  out.entropy_bits = s.fresh_entropy().first;
  out.feasible = within_budget(static_cast<Index>(out.cuts.size()) + 1, &out.near_budget);
  return out;
}

std::vector<GreedyResult> greedy_partition_rows(const std::vector<std::vector<double>>& rows,
                                                std::optional<Index> groups, double R) {
  std::vector<GreedyResult> out(rows.size());
  std::string error;
#pragma omp parallel for schedule(dynamic)
  for (std::size_t r = 0; r < rows.size(); ++r) {
    try {
      out[r] = greedy_partition(rows[r], groups, R);
    } catch (const std::exception& e) {
#pragma omp critical
      error = e.what();
    }
  }
  if (!error.empty()) throw std::invalid_argument(error);
  return out;
}

}  // namespace kvaudit::pooling
