// Check of proofs/04_eg_chunkkv_budget.md: EG-ChunkKV keeps exactly L positions (the walk/top-up invariant,
// for any gates and any chunk order), and when ChunkKV's chunk budget keeps the same number of tokens.
// Abstract walk exhaustive over gates and orders; the oracle exhaustive over small score vectors; RapidCheck.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "oracle/chunk_selection.h"
#include "proofs/proof_report.h"

namespace {
using kvaudit::Flavour;
using kvaudit::HeadScores;
using kvaudit::Index;
using kvaudit::Method;
using kvaudit::Positions;
using kvaudit::SelectorParams;
using kvaudit::proofs::report;
namespace oracle = kvaudit::oracle;

// ---- The walk as the proof states it, on sets: any gate pattern, any chunk order, any in-chunk choice ----
// Returns "" or the broken invariant. `order` is the visiting order of chunks, `gated[i]` = important && spiky.
std::string abstract_walk(Index T, Index c, Index L, Index r, const std::vector<Index>& order,
                          const std::vector<bool>& gated, Index* kept_out) {
  std::set<Index> K;
  Index b = L;
  for (Index i : order) {
    if (b <= 0) break;
    const Index begin = i * c, end = std::min(T, begin + c), n = end - begin;
    Index n_kept = std::min(n, b);
    if (gated[i]) n_kept = std::min(n_kept, r);
    if (n_kept < 1 || n_kept > b || n_kept > n) return "n_kept outside [1, min(b, n_i)]";
    // Any n_kept positions of the chunk: take them from the chunk's end (a different choice than the oracle's).
    for (Index j = end - n_kept; j < end; ++j)
      if (!K.insert(j).second) return "position kept twice";
    b -= n_kept;
    if (static_cast<Index>(K.size()) + b != L) return "|K| + b != L during the walk";
  }
  if (b < 0) return "b < 0";
  if (b > 0) {
    Index added = 0;
    for (Index j = 0; j < T && added < b; ++j)
      if (K.insert(j).second) ++added;
    if (added != b) return "top-up could not find b fresh positions";
  }
  *kept_out = static_cast<Index>(K.size());
  return static_cast<Index>(K.size()) == L ? "" : "final |K| != L";
}

TEST(Proof04, AbstractWalkEveryGateAndOrder) {
  std::mt19937_64 rng(404);
  long walks = 0, exhaustive_orders = 0, with_topup = 0;
  for (Index T = 1; T <= 9; ++T) {
    for (Index c = 1; c <= T; ++c) {
      const Index n = (T + c - 1) / c;
      std::vector<std::vector<Index>> orders;
      std::vector<Index> o(static_cast<std::size_t>(n));
      std::iota(o.begin(), o.end(), Index{0});
      if (n <= 5) {
        do orders.push_back(o);
        while (std::next_permutation(o.begin(), o.end()));
        exhaustive_orders += static_cast<long>(orders.size());
      } else {
        for (int k = 0; k < 24; ++k) std::shuffle(o.begin(), o.end(), rng), orders.push_back(o);
      }
      for (unsigned mask = 0; mask < (1u << n); ++mask) {
        std::vector<bool> gated(static_cast<std::size_t>(n));
        for (Index i = 0; i < n; ++i) gated[i] = (mask >> i) & 1u;
        for (const auto& order : orders)
          for (Index L = 1; L <= T; ++L)
            for (Index r = 1; r <= c; ++r) {
              Index kept = 0;
              ASSERT_EQ(abstract_walk(T, c, L, r, order, gated, &kept), "") << "T=" << T << " c=" << c << " L=" << L;
              with_topup += mask != 0 && r < c;
              ++walks;
            }
      }
    }
  }
  report().cover("abstract-walk", std::to_string(walks) + " walks: T<=9, every c, L=1..T (L = T included), r=1..c, all 2^n gate "
                                  "patterns, all chunk orders when n<=5 chunks (" + std::to_string(exhaustive_orders) +
                                  " orders) else 24 seeded ones");
}

// ---- The oracle on every small input -----------------------------------------------------------------------
SelectorParams eg_params(Flavour f, const char* rho, Index c, Index r) {
  SelectorParams p;
  p.method = Method::EgChunkKV;
  p.flavour = f;
  p.ratio = {rho, std::strtod(rho, nullptr)};
  p.chunk_length = c;
  p.rescue_size = r;
  return p;
}

// Exact and float budgets computed independently of the oracle (rho = a/100).
Index exact_budget(Index T, int a) { return std::max<Index>(1, (100 - a) * T / 100); }
Index float_budget(Index T, double rho) { return std::max<Index>(1, static_cast<Index>(static_cast<double>(T) * (1.0 - rho))); }

std::string check_selection(const HeadScores& s, const SelectorParams& p, int a) {
  const kvaudit::Selection sel = oracle::eg_chunkkv_select(s, p);
  if (sel.kept.size() != 1) return "selection is not shared by all heads";
  const Positions& k = sel.kept[0];
  for (std::size_t i = 0; i < k.size(); ++i)
    if (k[i] < 0 || k[i] >= s.tokens || (i > 0 && k[i] <= k[i - 1])) return "positions not strictly increasing in range";
  Index L = p.flavour == Flavour::Exact ? exact_budget(s.tokens, a)
                                        : (p.ratio.value == 0.0 ? s.tokens : float_budget(s.tokens, p.ratio.value));
  if (oracle::declared_budget(s.tokens, p) != L) return "oracle declared budget differs from the rule";
  if (L > s.tokens) return "L > T";
  if (static_cast<Index>(k.size()) != L) return "kept " + std::to_string(k.size()) + " != L = " + std::to_string(L);
  return "";
}

TEST(Proof04, OracleEverySmallInput) {
  const struct { const char* text; int a; } rhos[] = {{"0.3", 30}, {"0.5", 50}, {"0.8", 80}, {"0.9", 90}};
  long calls = 0, vectors = 0;
  for (Index T = 1; T <= 6; ++T) {
    std::vector<float> x(static_cast<std::size_t>(T), 0.0f);
    long count = 1;
    for (Index i = 0; i < T; ++i) count *= 3;
    for (long code = 0; code < count; ++code) {
      long v = code;
      for (Index i = 0; i < T; ++i, v /= 3) x[i] = static_cast<float>(v % 3);
      HeadScores s{1, T, x};
      ++vectors;
      for (Index c = 1; c <= T; ++c)
        for (const auto& rho : rhos) {
          for (Index r = 1; r <= c; ++r) {
            if (r != 1 && r != 2 && r != c - 1 && r != c) continue;  // rescue sizes that change the walk's cases
            ASSERT_EQ(check_selection(s, eg_params(Flavour::Exact, rho.text, c, r), rho.a), "") << "exact T=" << T << " c=" << c;
            ++calls;
            if (c > r) {  // the released code asserts chunk_length > low_entropy_chunk_length >= 1
              ASSERT_EQ(check_selection(s, eg_params(Flavour::Kvpress, rho.text, c, r), rho.a), "") << "kvpress T=" << T;
              ++calls;
            }
          }
        }
    }
  }
  report().cover("oracle-exhaustive", std::to_string(calls) + " oracle selections: every score vector in {0,1,2}^T, T<=6 (" +
                                          std::to_string(vectors) + " vectors), every c<=T, " +
                                          "r in {1,2,c-1,c}, rho in {0.3,0.5,0.8,0.9}, both flavours");
}

TEST(Proof04, OracleRapidCheck) {
  long cases = 0, boundary = 0;
  const bool ok = rc::check("EG-ChunkKV keeps exactly L", [&] {
    const Index heads = *rc::gen::inRange<Index>(1, 5), T = *rc::gen::inRange<Index>(1, 301);
    const Flavour f = *rc::gen::element(Flavour::Kvpress, Flavour::Exact);
    const Index c = *rc::gen::inRange<Index>(f == Flavour::Kvpress ? 2 : 1, 41);
    const Index r = *rc::gen::inRange<Index>(1, f == Flavour::Kvpress ? c : c + 3);
    const int a = *rc::gen::inRange(0, 100);
    char text[8];
    std::snprintf(text, sizeof text, "0.%02d", a);
    SelectorParams p = eg_params(f, text, c, r);
    if (f == Flavour::Exact) {
      p.median = *rc::gen::element(kvaudit::MedianRule::Lower, kvaudit::MedianRule::MeanOfMiddles);
      if (*rc::gen::inRange(0, 3) == 0) p.entropy_threshold = *rc::gen::element(0.0, 0.3, 0.5, 1.0);
    }
    // Negative values only for the kvpress flavour (raw scores); the exact flavour clamps them anyway.
    const auto pool = rc::gen::element(0.0f, 0.0f, 1.0f, 0.5f, 0.25f, 2.0f, 7.0f, -0.5f);
    const auto values = *rc::gen::container<std::vector<float>>(static_cast<std::size_t>(heads * T), pool);
    HeadScores s{heads, T, values};
    RC_ASSERT(check_selection(s, p, a) == std::string());
    boundary += (a == 0) || oracle::declared_budget(T, p) == T;
    RC_CLASSIFY(a == 0, "rho = 0");
    ++cases;
  });
  ASSERT_TRUE(ok);
  report().cover("oracle-random", std::to_string(cases) + " RapidCheck inputs (1-4 heads, T<=300, c<=40, rho on 0.01 grid, "
                                      "both flavours, median rules, fixed tau), " + std::to_string(boundary) + " with L = T");
}

TEST(Proof04, BudgetAtMostT) {
  // L <= T for both rules, including the float corner fl(1 - rho) = 1 (rho below 2^-53).
  long checked = 0;
  for (double rho : {0.0, 1e-17, 1e-16, 0.05, 0.3, 0.55, 0.9, 0.95, 0.99})
    for (Index T = 1; T <= 5000; ++T) {
      ASSERT_LE(oracle::kvpress_token_budget(T, rho), T);
      ++checked;
    }
  EXPECT_EQ(oracle::kvpress_token_budget(1000, 1e-17), 1000);  // L = T with rho > 0 in the float rule
  SelectorParams p = eg_params(Flavour::Kvpress, "0.00000000000000001", 4, 2);
  std::vector<float> x(12, 1.0f);
  EXPECT_EQ(oracle::eg_chunkkv_select(HeadScores{1, 12, x}, p).kept[0].size(), 12u);
  report().cover("L<=T", std::to_string(checked) + " float budgets <= T (incl. rho=1e-17 where L = T)");
}

// ---- ChunkKV vs EG-ChunkKV budgets -----------------------------------------------------------------------
// The characterization of the Markdown, exact rule: tokens kept by ChunkKV equal L for every input iff
// rho = 0, or no complete chunk, or (T % c == 0 and (c == 1 or (x >= 1 and frac(x) < 1/c))), x = N (1 - rho).
bool coincide_exact_predicted(Index T, Index c, int a) {
  if (a == 0) return true;
  const Index N = T / c, s = T % c;
  if (N == 0) return true;
  if (s != 0) return false;
  if (c == 1) return true;
  // x = N (100 - a) / 100: floor and frac in integers.
  const Index num = N * (100 - a);
  if (num < 100) return false;
  return (num % 100) * c < 100;
}

bool coincide_oracle(Index T, Index c, const char* text, Flavour f) {
  SelectorParams p = eg_params(f, text, c, 1);
  p.method = Method::ChunkKV;
  const oracle::ChunkKvBudget b = oracle::chunkkv_budget(T, p);
  SelectorParams e = eg_params(f, text, c, 1);
  const Index L = oracle::declared_budget(T, e);
  return b.min_tokens == b.max_tokens && b.min_tokens == L;
}

TEST(Proof04, ChunkKvBudgetRelation) {
  long checked = 0, coincide = 0, flavour_disagree = 0;
  std::string smallest;
  std::string first_disagree;
  for (int a = 0; a <= 95; a += 5) {
    char text[8];
    std::snprintf(text, sizeof text, "0.%02d", a);
    for (Index c = 1; c <= 32; ++c) {
      Index first_nondegenerate = 0;
      for (Index T = 1; T <= 1000; ++T) {
        const bool e = coincide_oracle(T, c, text, Flavour::Exact);
        ASSERT_EQ(e, coincide_exact_predicted(T, c, a)) << "rho " << text << " T " << T << " c " << c;
        const bool k = coincide_oracle(T, c, text, Flavour::Kvpress);
        coincide += e;
        ++checked;
        if (e != k) {
          ++flavour_disagree;
          if (first_disagree.empty())
            first_disagree = std::string("rho=") + text + " T=" + std::to_string(T) + " c=" + std::to_string(c);
        }
        // Smallest T with a divergence in the non-degenerate regime: T = Nc, N (1 - rho) >= 1.
        if (!first_nondegenerate && c >= 2 && a > 0 && T % c == 0 && (T / c) * (100 - a) >= 100 && !k)
          first_nondegenerate = T;
      }
      if ((c == 2 || c == 10 || c == 20) && a > 0)
        smallest += std::string(smallest.empty() ? "" : ", ") + text + "/c" + std::to_string(c) + "->" +
                    std::to_string(first_nondegenerate);
    }
  }
  std::printf("[04] smallest non-degenerate divergence (kvpress rules), rho/c->T: %s\n", smallest.c_str());
  std::printf("[04] first (T,c,rho) where the exact and kvpress flavours disagree on coinciding: %s\n", first_disagree.c_str());
  ASSERT_GT(coincide, 0);
  ASSERT_LT(coincide, checked);
  report().cover("chunkkv-relation", std::to_string(checked) + " (T<=1000, c<=32, rho on the 0.05 grid incl. 0): exact "
                                         "characterization matches the oracle everywhere (" + std::to_string(coincide) +
                                         " coincide); kvpress and exact rules disagree on " + std::to_string(flavour_disagree));
}

TEST(Proof04, PinnedCounterexamples) {
  struct Case { Index T, c; const char* rho; Flavour f; Index chunk_min, chunk_max, eg; };
  const Case cases[] = {
      {2, 2, "0.05", Flavour::Kvpress, 2, 2, 1},        // N (1-rho) < 1: ChunkKV keeps a whole chunk, L = 1
      {6, 2, "0.5", Flavour::Kvpress, 2, 2, 3},         // frac(N (1-rho)) = 1/2 >= 1/c
      {20, 2, "0.8", Flavour::Exact, 4, 4, 4},          // exact: coincide (N (1-rho) = 2)
      {20, 2, "0.8", Flavour::Kvpress, 2, 2, 3},        // kvpress: int(1.9999999999999996) = 1 chunk, L = 3
      {4096, 10, "0.9", Flavour::Kvpress, 396, 400, 409},  // RULER-4096 at the PR's c = 10: 2.3 % more for EG
      {4096, 10, "0.9", Flavour::Exact, 406, 410, 409},
  };
  for (const Case& k : cases) {
    SelectorParams p = eg_params(k.f, k.rho, k.c, 1);
    p.method = Method::ChunkKV;
    const oracle::ChunkKvBudget b = oracle::chunkkv_budget(k.T, p);
    EXPECT_EQ(b.min_tokens, k.chunk_min) << k.T << " " << k.rho;
    EXPECT_EQ(b.max_tokens, k.chunk_max) << k.T << " " << k.rho;
    EXPECT_EQ(oracle::declared_budget(k.T, eg_params(k.f, k.rho, k.c, 1)), k.eg) << k.T << " " << k.rho;
  }
  report().cover("pinned", "6 pinned ChunkKV/EG-ChunkKV budget pairs (incl. T=4096, c=10, rho=0.9: ChunkKV 396/400 vs EG 409)");
}

TEST(Proof04, Verdict) {
  report().conclude("04_eg_chunkkv_budget", "proved-and-checked",
                    {"abstract-walk", "oracle-exhaustive", "oracle-random", "L<=T", "chunkkv-relation", "pinned"});
}

}  // namespace
