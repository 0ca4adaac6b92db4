// Interval-cover DP over the achievable partial entropies, its upper bound and witnesses (see partition_reach.h).
#include "oracle/partition_reach.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kvaudit::oracle {

void reduce_to_closest(std::vector<ReachInterval>& list, int max_intervals) {
  const std::size_t n = list.size(), keep = static_cast<std::size_t>(std::max(1, max_intervals));
  if (n <= keep) return;
  // Merge the n - keep smallest gaps (ties toward the lower gap index, so the result is deterministic).
  std::vector<std::size_t> order(n - 1);
  for (std::size_t t = 0; t + 1 < n; ++t) order[t] = t;
  const auto gap = [&](std::size_t t) { return list[t + 1].lo - list[t].hi; };
  const std::size_t merges = n - keep;
  std::nth_element(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(merges - 1), order.end(),
                   [&](std::size_t a, std::size_t b) { return gap(a) < gap(b) || (gap(a) == gap(b) && a < b); });
  std::vector<char> merge(n - 1, 0);
  for (std::size_t t = 0; t < merges; ++t) merge[order[t]] = 1;
  std::size_t out = 0;
  for (std::size_t t = 1; t < n; ++t) {
    if (merge[t - 1]) {  // the union's hull: lo of the first, hi of the last (both still real ends)
      list[out].hi = list[t].hi;
      list[out].hi_prev = list[t].hi_prev;
      list[out].hi_at = list[t].hi_at;
    } else {
      list[++out] = list[t];
    }
  }
  list.resize(out + 1);
}

namespace {

struct Round {
  const IntervalTable& h;
  const SuffixBounds& suffix;
  const std::vector<double>& free_up;
  Index n, m;       // m = 0: free form (one layer, sources in the same layer)
  double R, floor, margin;
  int K;
  ReachReducer reducer;
  std::int64_t& work;
  std::int64_t max_work;
  std::int64_t max_stored;
  std::int64_t stored = 0;
  std::chrono::steady_clock::time_point deadline;
  std::vector<std::vector<ReachInterval>> cover;
  // Optional band (witness rounds only, never a bound): state (j, k) exists only for |j - band[k]| <= width.
  const std::vector<Index>* band = nullptr;
  Index width = 0;
  Index band_lo(Index k) const { return band ? (*band)[static_cast<std::size_t>(k)] - width : 0; }
  Index band_hi(Index k) const { return band ? (*band)[static_cast<std::size_t>(k)] + width : n; }

  Index layers() const { return m == 0 ? 1 : m + 1; }
  std::size_t at(Index j, Index k) const { return static_cast<std::size_t>(j * layers() + (m == 0 ? 0 : k)); }

  // Range of the completions of a state: [lo, up] of sum h over the groups still to place in (j, n].
  bool completion(Index j, Index k, double& lo, double& up) const {
    if (m == 0) {
      lo = j == n ? 0.0 : h(j, n);
      up = free_up[static_cast<std::size_t>(j)];
      return true;
    }
    up = suffix.upper(j, m - k);
    lo = suffix.lower(j, m - k);
    return !std::isnan(up) && !std::isnan(lo);
  }

  // Unites `scratch` with `dst` (sorted, disjoint) into `dst`, sorted and disjoint, reduced to K; empties
  // scratch. Overlapping or touching intervals become one, keeping the larger hi with its source.
  void flush(std::vector<ReachInterval>& dst, std::vector<ReachInterval>& scratch) {
    scratch.insert(scratch.end(), dst.begin(), dst.end());
    std::sort(scratch.begin(), scratch.end(), [](const ReachInterval& a, const ReachInterval& b) {
      return a.lo < b.lo || (a.lo == b.lo && a.hi > b.hi);
    });
    dst.clear();
    dst.push_back(scratch[0]);
    for (std::size_t t = 1; t < scratch.size(); ++t) {
      ReachInterval& cur = dst.back();
      if (scratch[t].lo <= cur.hi) {
        if (scratch[t].hi > cur.hi) {
          cur.hi = scratch[t].hi;
          cur.hi_prev = scratch[t].hi_prev;
          cur.hi_at = scratch[t].hi_at;
        }
      } else {
        dst.push_back(scratch[t]);
      }
    }
    scratch.clear();
    reducer(dst, K);
  }

  // Builds the cover of (j, k) from every predecessor (i, k - 1) (free form: (i)). False when out of budget.
  // Candidates are reduced in batches of 4K (a union of covers reduced again is still a cover), so a state
  // with thousands of predecessors costs O(N log K) rather than a sort of all N candidates: at n = 2048 that
  // sort was the largest single cost.
  bool build(Index j, Index k, std::vector<ReachInterval>& scratch) {
    double clo, cup;
    std::vector<ReachInterval>& dst = cover[at(j, k)];
    dst.clear();
    if (!completion(j, k, clo, cup)) return true;
    scratch.clear();
    const std::size_t batch = static_cast<std::size_t>(std::max(64, 4 * K));
    const Index first = m == 0 ? 0 : std::max(k - 1, band_lo(k - 1));
    const Index last = m == 0 ? j - 1 : std::min(j - 1, band_hi(k - 1));
    for (Index i = first; i <= last; ++i) {
      const std::vector<ReachInterval>& src = cover[at(i, m == 0 ? 0 : k - 1)];
      if (src.empty()) continue;
      const double hij = h(i, j);
      // The source list is sorted with disjoint intervals, so its ends are sorted too: the relevant sources
      // (those not dropped by the test below) form one run, found by binary search on hi.
      const double need_hi = floor - margin - cup - hij;
      std::size_t t = static_cast<std::size_t>(
          std::lower_bound(src.begin(), src.end(), need_hi, [](const ReachInterval& iv, double v) { return iv.hi < v; }) -
          src.begin());
      if (t > 0) --t;  // the test is repeated on the shifted values; one more candidate keeps it exact
      for (; t < src.size(); ++t) {
        ++work;
        const double lo = src[t].lo + hij, hi = src[t].hi + hij;
        // Dropped whole when no completion can land in [floor, R]: see proofs/13_reach_bound.md (R2).
        if (lo + clo > R + margin) break;  // and so is every later one (lo increases)
        if (hi + cup < floor - margin) continue;
        scratch.push_back({lo, hi, static_cast<std::int32_t>(i), static_cast<std::int32_t>(t), static_cast<std::int32_t>(i),
                           static_cast<std::int32_t>(t)});
      }
      if (scratch.size() >= batch) flush(dst, scratch);
    }
    if (work > max_work || std::chrono::steady_clock::now() > deadline) return false;
    if (!scratch.empty()) flush(dst, scratch);
    stored += static_cast<std::int64_t>(dst.size());
    return stored <= max_stored;
  }

  bool run() {
    cover.assign(static_cast<std::size_t>((n + 1) * layers()), {});
    cover[at(0, 0)].push_back({0.0, 0.0, -1, -1, -1, -1});
    std::vector<ReachInterval> scratch;
    if (m == 0) {
      for (Index j = 1; j <= n; ++j)
        if (!build(j, 0, scratch)) return false;
      return true;
    }
    for (Index k = 1; k <= m; ++k)
      for (Index j = std::max(k, band_lo(k)); j <= std::min(n - (m - k), band_hi(k)); ++j)
        if (!build(j, k, scratch)) return false;
    return true;
  }

  // Depth-first search backward from (n, m) for a partition whose double value lies in [tlo, thi]: a
  // predecessor (i, k - 1) is tried only when its cover meets the window shifted by the suffix value so far
  // (with the margin). The covers over-approximate, so a branch can still fail deeper down; `nodes` bounds the
  // search. Whatever it finds is only offered to the incumbent, which decides it exactly.
  bool find_in_window(double tlo, double thi, std::int64_t& nodes, std::vector<Index>& found) const {
    std::vector<Index> path{n};
    return descend(n, m, 0.0, tlo, thi, nodes, path, found);
  }
  static bool meets(const std::vector<ReachInterval>& list, double lo, double hi) {
    auto it = std::lower_bound(list.begin(), list.end(), lo,
                               [](const ReachInterval& iv, double v) { return iv.hi < v; });  // first hi >= lo
    return it != list.end() && it->lo <= hi;
  }
  bool descend(Index j, Index k, double suffix_value, double tlo, double thi, std::int64_t& nodes,
               std::vector<Index>& path, std::vector<Index>& found) const {
    if (--nodes < 0) return false;
    if (j == 0) {
      if (suffix_value < tlo - margin || suffix_value > thi + margin) return false;
      found.assign(path.rbegin(), path.rend());
      return true;
    }
    if (m != 0 && k == 0) return false;
    const Index first = m == 0 ? 0 : std::max(k - 1, band_lo(k - 1));
    for (Index i = m == 0 ? j - 1 : std::min(j - 1, band_hi(k - 1)); i >= first; --i) {
      const std::vector<ReachInterval>& src = cover[at(i, m == 0 ? 0 : k - 1)];
      if (src.empty()) continue;
      const double s2 = suffix_value + h(i, j);
      if (!meets(src, tlo - s2 - margin, thi - s2 + margin)) continue;
      path.push_back(i);
      if (descend(i, m == 0 ? 0 : k - 1, s2, tlo, thi, nodes, path, found)) return true;
      path.pop_back();
      if (nodes < 0) return false;
    }
    return false;
  }

  // Full bounds of the partial partition whose double value is end `hi` (or lo) of interval `t` at (n, m).
  std::vector<Index> backtrack(std::size_t t, bool hi) const {
    std::vector<Index> b;
    Index j = n, k = m;
    std::int32_t idx = static_cast<std::int32_t>(t);
    while (true) {
      b.push_back(j);
      const ReachInterval& iv = cover[at(j, k)][static_cast<std::size_t>(idx)];
      const std::int32_t prev = hi ? iv.hi_prev : iv.lo_prev;
      if (prev < 0) break;
      idx = hi ? iv.hi_at : iv.lo_at;
      j = prev;
      if (m != 0) --k;
    }
    std::reverse(b.begin(), b.end());
    return b;
  }
};

}  // namespace

ReachResult reach_upper_bound(const IntervalTable& h, const SuffixBounds& suffix, const std::vector<double>& free_up,
                              Incumbent& inc, Index n, std::optional<Index> groups, double R, double hmax,
                              const ReachLimits& limits) {
  ReachResult out;
  const Index m = groups ? *groups : 0;
  const Index terms = groups ? *groups : n;
  // e bounds |v - H| for every partial or complete partition (values <= hmax, <= terms summands); the margin
  // adds the roundings of the double comparisons themselves (values < 2^6, so below 2^-40).
  const double e = entropy_error_bound(std::max(hmax, R), terms);
  const double margin = 4.0 * e + std::ldexp(1.0, -40);
  const double top = R + 2.0 * e;  // every feasible partition has v <= R + e < top
  // Banded witness rounds first (fixed m, with an incumbent): the DP restricted to cuts within `band_width` of
  // the incumbent's, which costs O(m W^2 K) instead of O(n^2 m K) (at n = 2048, m = 512 a full round is ~1e9
  // shifted intervals). Only witnesses come out of it: a restricted cover proves nothing about the rest.
  if (groups && inc.has() && limits.band_width > 0) {
    const double floor = inc.lower();
    const std::vector<Index> centre = inc.bounds();
    Round r{h, suffix, free_up, n, m, R, floor, margin, limits.band_intervals, limits.reducer, out.work, limits.max_work,
            limits.max_stored, 0, limits.deadline, {}, &centre, limits.band_width};
    if (r.run()) {
      const std::vector<ReachInterval>& fin = r.cover[r.at(n, m)];
      double ud = -std::numeric_limits<double>::infinity();
      for (const ReachInterval& iv : fin)
        if (iv.lo <= top) ud = std::max(ud, std::min(iv.hi, top));
      if (std::isfinite(ud)) {
        // The window search aims at R, the band's cover at or below it: whichever is lower.
        for (double w = std::max(limits.target_bits / 4, std::ldexp(1.0, -40));; w *= 16) {
          const double U = std::min(R, ud);
          if (U - inc.lower() <= limits.target_bits / 2) break;
          std::int64_t nodes = limits.witness_nodes;
          std::vector<Index> found;
          const bool hit = r.find_in_window(std::max(U - w, inc.lower()), U, nodes, found);
          out.work += limits.witness_nodes - std::max<std::int64_t>(nodes, 0);
          if (hit) {
            inc.offer(found, h.entropy(found));
            ++out.witnesses_offered;
            break;
          }
          if (U - w <= inc.lower()) break;
        }
      }
    }
  }
  int K = std::max(1, limits.first_intervals);
  while (true) {
    // Narrow enough against R alone (a witness that close needs no bound below R): no full round.
    if (inc.has() && std::min(R, std::isnan(out.upper) ? R : out.upper) - inc.lower() <= limits.target_bits) break;
    const double floor = inc.has() ? inc.lower() : -std::numeric_limits<double>::infinity();
    Round r{h, suffix, free_up, n, m, R, floor, margin, K, limits.reducer, out.work, limits.max_work, limits.max_stored, 0, limits.deadline, {}};
    if (!r.run()) break;
    ++out.rounds;
    out.last_intervals = K;
    const std::vector<ReachInterval>& fin = r.cover[r.at(n, m)];
    double ud = -std::numeric_limits<double>::infinity();
    for (const ReachInterval& iv : fin)
      if (iv.lo <= top) ud = std::max(ud, std::min(iv.hi, top));
    // Witnesses: the real ends nearest R from below, decided exactly by the incumbent.
    int offered = 0;
    for (std::size_t t = fin.size(); t-- > 0 && offered < 8;) {
      if (fin[t].lo > top) continue;
      if (fin[t].hi <= top) {
        inc.offer(r.backtrack(t, true), fin[t].hi);
        ++offered;
      }
      inc.offer(r.backtrack(t, false), fin[t].lo);
      ++offered;
    }
    // The least covered value is the least entropy of any relevant partition: feasible whenever any is.
    if (!fin.empty() && !inc.has()) {
      inc.offer(r.backtrack(0, false), fin[0].lo);
      ++offered;
    }
    // Targeted witnesses: a partition just below the bound, in windows widening from the target width, each
    // searched with its own node budget, until one is found or the window reaches the incumbent.
    if (std::isfinite(ud)) {
      const double U = std::min(R, ud);
      const double bottom = inc.has() ? inc.lower() : -1.0;  // entropies are >= 0
      for (double w = std::max(limits.target_bits / 4, std::ldexp(1.0, -40));; w *= 16) {
        if (inc.has() && U - inc.lower() <= limits.target_bits) break;
        std::int64_t nodes = limits.witness_nodes;
        std::vector<Index> found;
        const bool hit = r.find_in_window(std::max(U - w, bottom), U, nodes, found);
        out.work += limits.witness_nodes - std::max<std::int64_t>(nodes, 0);
        if (hit) {
          inc.offer(found, h.entropy(found));
          ++offered;
          break;
        }
        if (U - w <= bottom) break;
      }
    }
    out.witnesses_offered += offered;
    if (ud == -std::numeric_limits<double>::infinity()) {
      // Nothing covered at or below R + e. With no incumbent the floor was -inf, so the cover held every
      // partition: none is feasible. (With one, its own value is covered, so this branch is not taken.)
      if (!inc.has()) {
        out.none_feasible = true;
        out.upper = -std::numeric_limits<double>::infinity();
      }
      break;
    }
    const double up = std::min(R, std::nextafter(ud + 2.0 * e, std::numeric_limits<double>::infinity()));
    out.upper = std::isnan(out.upper) ? up : std::min(out.upper, up);
    if (inc.has() && out.upper - inc.lower() <= limits.target_bits) break;
    if (K >= limits.max_intervals) break;
    K = std::min(limits.max_intervals, K * std::max(2, limits.growth));
  }
  return out;
}

}  // namespace kvaudit::oracle
