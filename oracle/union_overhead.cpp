// Reference union overhead: per-head top-k by plain sorting, set algebra on std::set, exact ratios.
#include "oracle/union_overhead.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>

namespace kvaudit::oracle::paging {

Positions head_top_k(std::span<const float> row, Index k) {
  const Index T = static_cast<Index>(row.size());
  k = std::clamp<Index>(k, 0, T);
  std::vector<Index> order(static_cast<std::size_t>(T));
  std::iota(order.begin(), order.end(), Index{0});
  std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) { return row[a] > row[b]; });
  Positions kept(order.begin(), order.begin() + k);
  std::sort(kept.begin(), kept.end());
  return kept;
}

namespace {
// A float times 2^149, as an exact integer: every finite float is an integer multiple of 2^-149 (the least
// subnormal), and the double ldexp only moves the exponent (|x| 2^149 < 2^277, well inside the double range), so
// the conversion is exact. Sums and maxima of these integers are the exact page scores times 2^149: the same
// order, ties included, as the exact rationals.
using ScaledScore = boost::multiprecision::int512_t;  // a page sum of T < 2^31 floats is below 2^309
ScaledScore scaled(float x) { return ScaledScore(std::ldexp(static_cast<double>(x), 149)); }
}  // namespace

std::vector<Index> head_top_pages(std::span<const float> row, Index page_size, Index k_pages, PageScore kind) {
  if (page_size < 1) throw std::invalid_argument("page size must be >= 1");
  const Index T = static_cast<Index>(row.size());
  // Exact page scores (as integers times 2^149): a float sum of a page could round two different pages to a tie.
  std::vector<ScaledScore> score;
  for (Index b = 0; b < T; b += page_size) {
    ScaledScore v = scaled(row[b]);
    for (Index t = b + 1; t < std::min(b + page_size, T); ++t) {
      const ScaledScore x = scaled(row[t]);
      if (kind == PageScore::Sum) v += x;
      else if (x > v) v = x;
    }
    score.push_back(v);
  }
  std::vector<Index> order(score.size());
  std::iota(order.begin(), order.end(), Index{0});
  std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) { return score[a] > score[b]; });
  k_pages = std::clamp<Index>(k_pages, 0, static_cast<Index>(order.size()));
  std::vector<Index> kept(order.begin(), order.begin() + k_pages);
  std::sort(kept.begin(), kept.end());
  return kept;
}

Index page_level_k(Index token_budget, Index page_size) { return std::max<Index>(1, token_budget / page_size); }

UnionOverhead union_overhead(const std::vector<std::vector<Index>>& sets) {
  if (sets.empty()) throw std::invalid_argument("union overhead of zero sets");
  UnionOverhead u;
  u.g = static_cast<Index>(sets.size());
  u.k = static_cast<Index>(sets[0].size());
  if (u.k == 0) throw std::invalid_argument("union overhead with k = 0");
  std::vector<std::set<Index>> s;
  for (const auto& v : sets) {
    s.emplace_back(v.begin(), v.end());
    if (static_cast<Index>(v.size()) != u.k || s.back().size() != v.size())
      throw std::invalid_argument("union overhead needs sets of one size without repeats");
  }
  std::set<Index> all;
  for (const auto& x : s) all.insert(x.begin(), x.end());
  u.union_size = static_cast<Index>(all.size());
  u.ratio = Ratio(u.union_size, u.k);
  // Which sets hold each element of the union, as a bit mask, when there are at most 64 sets (else inter below
  // looks every element up in the other sets).
  const bool masks = s.size() <= 64;
  std::vector<std::uint64_t> member_of;  // one mask per element of the union
  if (masks) {
    std::map<Index, std::uint64_t> by_element;
    for (std::size_t i = 0; i < s.size(); ++i)
      for (Index e : s[i]) by_element[e] |= std::uint64_t{1} << i;
    for (const auto& [e, mask] : by_element) member_of.push_back(mask);
  }
  // |S_idx[0] ∩ S_idx[1] ∩ ...|: the elements held by every set of idx.
  auto inter = [&](const std::vector<std::size_t>& idx) {
    Index n = 0;
    if (masks) {
      std::uint64_t want = 0;
      for (std::size_t i : idx) want |= std::uint64_t{1} << i;
      for (std::uint64_t mask : member_of) n += (mask & want) == want;
      return n;
    }
    for (Index e : s[idx[0]]) {
      bool everywhere = true;
      for (std::size_t i = 1; i < idx.size(); ++i) everywhere = everywhere && s[idx[i]].count(e) > 0;
      n += everywhere;
    }
    return n;
  };
  const std::size_t G = s.size();
  u.min_pairwise_intersection = G >= 2 ? u.k : 0;
  for (std::size_t i = 0; i < G; ++i) {
    u.s1 += static_cast<Index>(s[i].size());
    for (std::size_t j = i + 1; j < G; ++j) {
      const Index ij = inter({i, j});
      u.s2 += ij;
      u.min_pairwise_intersection = std::min(u.min_pairwise_intersection, ij);
      for (std::size_t l = j + 1; l < G; ++l) u.s3 += inter({i, j, l});
    }
  }
  u.bonferroni_lower = u.s1 - u.s2;
  u.bonferroni_upper = u.s1 - u.s2 + u.s3;
  if (G <= 16) {
    Index sum = 0;
    for (unsigned mask = 1; mask < (1u << G); ++mask) {
      std::vector<std::size_t> idx;
      for (std::size_t i = 0; i < G; ++i)
        if (mask & (1u << i)) idx.push_back(i);
      const Index n = inter(idx);
      sum += (idx.size() % 2 == 1) ? n : -n;
    }
    u.inclusion_exclusion = sum;
  }
  return u;
}

UnionOverhead token_union_overhead(const std::vector<std::span<const float>>& rows, Index k) {
  std::vector<std::vector<Index>> sets;
  for (const auto& r : rows) sets.push_back(head_top_k(r, k));
  return union_overhead(sets);
}

UnionOverhead page_union_overhead(const std::vector<std::span<const float>>& rows, Index k, Index page_size, PageScore kind) {
  std::vector<std::vector<Index>> sets;
  for (const auto& r : rows) sets.push_back(head_top_pages(r, page_size, page_level_k(k, page_size), kind));
  return union_overhead(sets);
}

Verdict check_union_identities(const UnionOverhead& u) {
  if (u.ratio < 1 || u.ratio > u.g)
    return Verdict::violates("range", "|U|/k = " + u.ratio.str() + " outside [1, " + std::to_string(u.g) + "]");
  if (u.union_size > u.s1 || u.union_size < u.bonferroni_lower || u.union_size > u.bonferroni_upper)
    return Verdict::violates("bonferroni", "|U| = " + std::to_string(u.union_size) + " outside [" +
                                               std::to_string(u.bonferroni_lower) + ", " + std::to_string(u.bonferroni_upper) + "]");
  if (u.inclusion_exclusion >= 0 && u.inclusion_exclusion != u.union_size)
    return Verdict::violates("inclusion-exclusion", "alternating sum " + std::to_string(u.inclusion_exclusion) +
                                                        " != |U| = " + std::to_string(u.union_size));
  if (u.g == 2 && u.ratio != Ratio(2) - Ratio(u.min_pairwise_intersection, u.k))
    return Verdict::violates("two-head", "|U|/k = " + u.ratio.str() + " != 2 - |S1 ∩ S2|/k");
  return Verdict::conforms();
}

}  // namespace kvaudit::oracle::paging
