// Check of proofs/06_union_overhead.md: 1 <= |U|/k <= G, the two-head identity |U|/k = 2 - |S1∩S2|/k and every
// Bonferroni truncation, exhaustively over all G-tuples of k-subsets of small ground sets (bitmasks, exact
// integers) against the oracle's union_overhead, plus random top-k / top-page sets from score rows.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <boost/multiprecision/cpp_int.hpp>
#include <bit>
#include <string>
#include <vector>

#include "oracle/union_overhead.h"
#include "proofs/proof_report.h"

namespace {
using kvaudit::Index;
using kvaudit::proofs::report;
namespace pg = kvaudit::oracle::paging;
using BigInt = boost::multiprecision::cpp_int;
using pg::Ratio;

long long binom(int n, int k) {
  if (k < 0 || k > n) return 0;
  long long r = 1;
  for (int i = 1; i <= k; ++i) r = r * (n - k + i) / i;
  return r;
}

std::vector<Index> members(unsigned mask) {
  std::vector<Index> v;
  for (Index i = 0; i < 32; ++i)
    if (mask & (1u << i)) v.push_back(i);
  return v;
}

// The check's own account of one tuple: |U| and s_j = sum_x C(c(x), j) (proof of U3).
struct Own {
  Index u = 0;
  std::vector<long long> s;  // s[j], j = 0..G
};
Own own_counts(const std::vector<unsigned>& sets, int n) {
  Own o;
  const int G = static_cast<int>(sets.size());
  o.s.assign(G + 1, 0);
  for (int x = 0; x < n; ++x) {
    int c = 0;
    for (unsigned m : sets) c += (m >> x) & 1u;
    if (c == 0) continue;
    ++o.u;
    for (int j = 0; j <= G; ++j) o.s[j] += binom(c, j);
  }
  return o;
}

// (U1)-(U3) for one tuple from the check's own counts, and agreement with the oracle.
std::string check_tuple(const std::vector<unsigned>& sets, int n, int k) {
  const int G = static_cast<int>(sets.size());
  const Own o = own_counts(sets, n);
  unsigned all = 0;
  bool equal = true, disjoint = true;
  for (int i = 0; i < G; ++i) {
    all |= sets[i];
    equal = equal && sets[i] == sets[0];
    for (int j = i + 1; j < G; ++j) disjoint = disjoint && (sets[i] & sets[j]) == 0;
  }
  if (o.u != std::popcount(all)) return "own count";
  if (o.u < k || o.u > G * k) return "U1 range";
  if ((o.u == k) != equal) return "U1 equality case |U| = k";
  if ((o.u == G * k) != disjoint) return "U1 equality case |U| = Gk";
  if (o.s[1] != static_cast<long long>(G) * k) return "s1 = Gk";
  long long partial = 0;
  for (int t = 1; t <= G; ++t) {
    partial += (t % 2 ? 1 : -1) * o.s[t];
    if (t % 2 == 1 && !(o.u <= partial)) return "U3 odd truncation";
    if (t % 2 == 0 && !(o.u >= partial)) return "U3 even truncation";
  }
  if (partial != o.u) return "inclusion-exclusion at t = G";
  if (G == 2 && Ratio(o.u, k) != Ratio(2) - Ratio(std::popcount(sets[0] & sets[1]), k)) return "U2";
  // The oracle, on the same sets.
  std::vector<std::vector<Index>> v;
  for (unsigned m : sets) v.push_back(members(m));
  const pg::UnionOverhead u = pg::union_overhead(v);
  if (u.union_size != o.u || u.s1 != o.s[1] || u.s2 != (G >= 2 ? o.s[2] : 0) || u.s3 != (G >= 3 ? o.s[3] : 0))
    return "oracle counts differ";
  if (u.inclusion_exclusion != o.u) return "oracle inclusion-exclusion";
  if (u.ratio != Ratio(o.u, k)) return "oracle ratio";
  if (!pg::check_union_identities(u).passed()) return "oracle check_union_identities: " + pg::check_union_identities(u).rule;
  return "";
}

TEST(Proof06, ExhaustiveSmallGroundSets) {
  struct Domain { int n, G; };
  const Domain domains[] = {{6, 1}, {6, 2}, {6, 3}, {6, 4}, {4, 5}};
  long tuples = 0, equal_cases = 0, disjoint_cases = 0;
  std::string text;
  for (const Domain& d : domains) {
    long here = 0;
    for (int k = 1; k <= d.n; ++k) {
      std::vector<unsigned> subsets;
      for (unsigned m = 0; m < (1u << d.n); ++m)
        if (std::popcount(m) == k) subsets.push_back(m);
      std::vector<std::size_t> idx(d.G, 0);
      while (true) {
        std::vector<unsigned> sets;
        for (std::size_t i : idx) sets.push_back(subsets[i]);
        const std::string err = check_tuple(sets, d.n, k);
        ASSERT_EQ(err, "") << "n=" << d.n << " G=" << d.G << " k=" << k;
        const Own o = own_counts(sets, d.n);
        equal_cases += o.u == k;
        disjoint_cases += o.u == d.G * k;
        ++here;
        int t = d.G - 1;
        while (t >= 0 && idx[t] + 1 == subsets.size()) idx[t--] = 0;
        if (t < 0) break;
        ++idx[t];
      }
    }
    tuples += here;
    text += (text.empty() ? "" : ", ") + std::string("(n=") + std::to_string(d.n) + ",G=" + std::to_string(d.G) +
            "): " + std::to_string(here);
  }
  ASSERT_GT(equal_cases, 0);
  ASSERT_GT(disjoint_cases, 0);
  report().cover("exhaustive", std::to_string(tuples) + " tuples of k-subsets, all k [" + text + "]; " +
                                   std::to_string(equal_cases) + " hit |U|=k, " + std::to_string(disjoint_cases) +
                                   " hit |U|=Gk");
}

TEST(Proof06, AlternatingBinomialIdentity) {
  long checked = 0;
  for (int c = 1; c <= 40; ++c) {
    for (int t = 0; t <= 40; ++t) {
      BigInt lhs = 0, bc = 1;  // bc = C(c, j)
      for (int j = 0; j <= t; ++j) {
        if (j > 0) bc = bc * (c - j + 1) / j;  // exact: C(c,j) = C(c,j-1) (c-j+1) / j
        lhs += (j % 2 ? -1 : 1) * bc;
      }
      BigInt rhs = 1;  // C(c-1, t)
      for (int j = 1; j <= t; ++j) rhs = rhs * (c - 1 - j + 1) / j;
      if (t > c - 1) rhs = 0;
      ASSERT_EQ(lhs, (t % 2 ? -1 : 1) * rhs) << "c=" << c << " t=" << t;
      ++checked;
    }
  }
  report().cover("binomial", std::to_string(checked) + " (c, t) pairs, c,t <= 40");
}

TEST(Proof06, RandomRowsTokenAndPageLevel) {
  long cases = 0, overhead_above_one = 0;
  const bool ok = rc::check("union overhead identities on top-k sets", [&] {
    const int G = *rc::gen::inRange(1, 9);
    const int T = *rc::gen::inRange(1, 201);
    const auto pool = rc::gen::element(0.0f, 0.0f, 0.25f, 0.5f, 0.5f, 1.0f, 0.125f, 3.0f);
    std::vector<std::vector<float>> rows;
    for (int h = 0; h < G; ++h) rows.push_back(*rc::gen::container<std::vector<float>>(static_cast<std::size_t>(T), pool));
    std::vector<std::span<const float>> spans(rows.begin(), rows.end());
    const Index k = *rc::gen::inRange<Index>(1, T + 1);
    const Index P = *rc::gen::inRange<Index>(1, 33);
    const auto kind = *rc::gen::element(kvaudit::PageScore::Sum, kvaudit::PageScore::Max);
    for (const pg::UnionOverhead& u : {pg::token_union_overhead(spans, k), pg::page_union_overhead(spans, k, P, kind)}) {
      RC_ASSERT(pg::check_union_identities(u).passed());
      RC_ASSERT(u.ratio >= 1 && u.ratio <= G);
      RC_ASSERT(u.s1 == G * u.k);
      RC_ASSERT(u.bonferroni_lower <= u.union_size && u.union_size <= u.bonferroni_upper);
      if (G == 2) RC_ASSERT(u.ratio == Ratio(2) - Ratio(u.min_pairwise_intersection, u.k));
      if (u.ratio > 1) ++overhead_above_one;
    }
    // A selection shared by the whole group (Page-EntroKV) has ratio exactly 1.
    std::vector<std::vector<Index>> shared(static_cast<std::size_t>(G), pg::head_top_k(spans[0], k));
    RC_ASSERT(pg::union_overhead(shared).ratio == 1);
    RC_CLASSIFY(G == 1, "G = 1");
    ++cases;
  });
  ASSERT_TRUE(ok);
  ASSERT_GT(overhead_above_one, 0);
  report().cover("random", std::to_string(cases) + " RapidCheck cases (G<=8, T<=200, P<=32, tie-heavy pool), " +
                               std::to_string(overhead_above_one) + " token/page records with ratio > 1");
}

TEST(Proof06, MutantRecordRejected) {
  const pg::UnionOverhead good = pg::union_overhead({{0, 1, 2}, {1, 2, 3}});
  ASSERT_TRUE(pg::check_union_identities(good).passed());
  pg::UnionOverhead bad = good;
  bad.union_size += 1;
  bad.ratio = Ratio(bad.union_size, bad.k);
  EXPECT_FALSE(pg::check_union_identities(bad).passed());
  report().cover("mutant", "off-by-one |U| rejected by check_union_identities");
}

TEST(Proof06, Verdict) {
  report().conclude("06_union_overhead", "proved-and-checked", {"exhaustive", "binomial", "random", "mutant"});
}

}  // namespace
