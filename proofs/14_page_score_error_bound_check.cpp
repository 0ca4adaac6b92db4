// Check of proofs/14_page_score_error_bound.md: page scores computed in float32 and float64, in the two orders
// implementations use, stay within gamma_n of the exact oracle's scores, n = (6k + 1)T + 2G + P + 14 + 2k with
// k = 1/tau (n = 7T + 2G + P + 16 at tau = 1), weights from sink-isolated or raw entropy; a planted bound without the
// T term is exceeded, so the check has teeth.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/paging/page_score_bound.h"
#include "oracle/page_entrokv.h"
#include "proofs/proof_report.h"

namespace {
using kvaudit::Index;
using kvaudit::PageParams;
using kvaudit::proofs::report;
namespace pg = kvaudit::oracle::paging;
namespace kp = kvaudit::paging;

enum class Order { A, B };  // A: c = sum p^2 / Z^2, s = sum (w / Z) p;  B: p~ = p / Z, c = sum p~^2, s = sum w p~

// The proof's chain in floating type F, transcribed from its table.
template <class F>
std::vector<F> page_scores(const std::vector<std::vector<float>>& rows, const PageParams& p, Order order) {
  const Index G = static_cast<Index>(rows.size()), T = static_cast<Index>(rows[0].size());
  const Index sink = std::min(p.n_sink, T);
  std::vector<F> z(G, F(0)), c(G, F(0));
  const bool raw_entropy = p.entropy_on == kvaudit::EntropySource::Raw;
  for (Index h = 0; h < G; ++h) {
    for (Index t = sink; t < T; ++t) z[h] += F(rows[h][t]);
    if (raw_entropy) {  // c = sum p^2 over the raw row
      for (Index t = 0; t < T; ++t) c[h] += F(rows[h][t]) * F(rows[h][t]);
      continue;
    }
    if (z[h] == F(0)) continue;
    if (order == Order::A) {
      F q = 0;
      for (Index t = sink; t < T; ++t) q += F(rows[h][t]) * F(rows[h][t]);
      c[h] = q / (z[h] * z[h]);
    } else {
      for (Index t = sink; t < T; ++t) {
        const F pt = F(rows[h][t]) / z[h];
        c[h] += pt * pt;
      }
    }
  }
  for (F& x : c) {  // c^k by k - 1 products
    const F base = x;
    for (Index j = 1; j < p.inverse_temperature; ++j) x *= base;
  }
  F total = 0;
  for (F x : c) total += x;
  std::vector<F> w(G, F(1) / F(G));
  if (p.pooling == kvaudit::PagePooling::Entropy && total > F(0))
    for (Index h = 0; h < G; ++h) w[h] = c[h] / total;
  const bool raw = p.source == kvaudit::PoolSource::Raw;
  std::vector<F> s(T, F(0));
  for (Index t = raw ? 0 : sink; t < T; ++t)
    for (Index h = 0; h < G; ++h) {
      if (raw) s[t] += w[h] * F(rows[h][t]);
      else if (z[h] > F(0)) s[t] += order == Order::A ? (w[h] / z[h]) * F(rows[h][t]) : w[h] * (F(rows[h][t]) / z[h]);
    }
  std::vector<F> pages;
  for (Index b = 0; b < T; b += p.page_size) {
    F v = s[b];
    for (Index t = b + 1; t < std::min(b + p.page_size, T); ++t) v = p.page_score == kvaudit::PageScore::Sum ? v + s[t] : std::max(v, s[t]);
    pages.push_back(v);
  }
  return pages;
}

// Adversarial rows: every nonzero value >= 2^-60 (the proof's hypothesis), normalized roughly to 1.
std::vector<float> row(std::mt19937_64& rng, Index T, int regime) {
  std::vector<float> r(T, 0.0f);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  for (Index t = 0; t < T; ++t) {
    switch (regime) {
      case 0: r[t] = static_cast<float>(u01(rng)); break;                                        // random
      case 1: r[t] = t == T / 3 ? 1.0f : 0x1p-30f * static_cast<float>(1 + rng() % 7); break;     // one dominant value
      case 2: r[t] = 1.0f + 0x1p-23f * static_cast<float>(rng() % 3); break;                      // values that round
      case 3: r[t] = static_cast<float>(rng() % 4) * 0.25f; break;                                 // ties and zeros
      case 4: r[t] = t < 4 ? 100.0f : static_cast<float>(std::ldexp(1.0, -static_cast<int>(rng() % 60))); break;  // sinks, wide range
      default: r[t] = 1.0f;                                                                        // all equal
    }
  }
  double sum = 0;
  for (float v : r) sum += v;
  if (sum > 0)
    for (float& v : r) {
      v = static_cast<float>(v / sum);
      if (v != 0.0f && v < 0x1p-60f) v = 0x1p-60f;
    }
  return r;
}

struct Worst {
  double ratio = 0;  // max |S^ - S| / (u S) over pages with S > 0
  std::string where;
};

// Checks every page against gamma_n and returns this call's largest |S^ - S| / (u S).
template <class F>
double measure(const std::vector<std::vector<float>>& rows, const PageParams& p, Order order, const std::vector<pg::Exact>& exact,
             double u, Worst& worst, long& pages_checked, const std::string& where) {
  const std::vector<F> got = page_scores<F>(rows, p, order);
  EXPECT_EQ(got.size(), exact.size());
  double largest = 0;
  const Index T = static_cast<Index>(rows[0].size()), G = static_cast<Index>(rows.size());
  const kp::ScorePrecision precision = sizeof(F) == 4 ? kp::ScorePrecision::Float32 : kp::ScorePrecision::Float64;
  const pg::Exact gamma(kp::page_score_rel_bound(precision, T, G, p.page_size, p.inverse_temperature));
  for (std::size_t k = 0; k < got.size(); ++k) {
    ++pages_checked;
    const pg::Exact err = abs(pg::Exact(static_cast<double>(got[k])) - exact[k]);
    if (exact[k] == 0) {
      EXPECT_EQ(got[k], F(0)) << where << " page " << k << ": an exactly zero page score must compute to 0";
      continue;
    }
    EXPECT_LE(err, gamma * exact[k]) << where << " page " << k << ": error beyond gamma_n";
    const double ratio = static_cast<double>(pg::Exact(err / (exact[k] * pg::Exact(u))));
    largest = std::max(largest, ratio);
    if (ratio > worst.ratio) worst = {ratio, where + " page " + std::to_string(k)};
  }
  return largest;
}

TEST(Proof14, ComputedPageScoresStayWithinTheBound) {
  std::mt19937_64 rng(14);
  long cases = 0, pages_checked = 0;
  Worst w32, w64;
  double planted_excess = 0;  // max over float32 cases of ratio / n' for the planted bound n' = 2G + P + 16
  std::string planted_where;
  for (Index T : {5, 17, 64, 256, 1024, 2048}) {
    for (Index G : {1, 2, 3, 7, 8}) {
      for (Index P : {1, 3, 16, 64}) {
        for (int regime = 0; regime < 6; ++regime) {
          if (T >= 1024 && (P == 1 || G == 2)) continue;  // keep the exact rationals affordable
          std::vector<std::vector<float>> rows;
          for (Index h = 0; h < G; ++h) rows.push_back(row(rng, T, (regime + static_cast<int>(h)) % 6));
          PageParams p;
          p.group_size = G;
          p.page_size = P;
          p.n_sink = static_cast<Index>(rng() % 5);
          p.pooling = rng() % 4 == 0 ? kvaudit::PagePooling::Mean : kvaudit::PagePooling::Entropy;
          p.source = rng() % 4 == 0 ? kvaudit::PoolSource::Raw : kvaudit::PoolSource::SinkIsolated;
          p.page_score = rng() % 3 == 0 ? kvaudit::PageScore::Max : kvaudit::PageScore::Sum;
          p.inverse_temperature = std::array<Index, 4>{1, 1, 2, 4}[rng() % 4];
          p.entropy_on = rng() % 4 == 0 ? kvaudit::EntropySource::Raw : kvaudit::EntropySource::SinkIsolated;
          std::vector<std::span<const float>> spans(rows.begin(), rows.end());
          const auto exact = pg::page_entrokv_group(spans, p).page_scores;
          const std::string where = "T=" + std::to_string(T) + " G=" + std::to_string(G) + " P=" + std::to_string(P) +
                                    " regime=" + std::to_string(regime);
          for (Order order : {Order::A, Order::B}) {
            const double r32 = measure<float>(rows, p, order, exact, std::ldexp(1.0, -24), w32, pages_checked, where + " float32");
            measure<double>(rows, p, order, exact, std::ldexp(1.0, -53), w64, pages_checked, where + " float64");
            const double planted = static_cast<double>(2 * G + P + 16);
            if (r32 / planted > planted_excess) planted_excess = r32 / planted, planted_where = where;
          }
          ++cases;
        }
      }
    }
  }
  // The planted bound n' = 2G + P + 16 (no T term) must be beaten, or the check could not tell a wrong bound.
  EXPECT_GT(planted_excess, 1.0) << "no case exceeds the planted bound: the generators are too gentle";
  report().cover("bound", std::to_string(cases) + " (rows, knobs) cases, " + std::to_string(pages_checked) +
                              " page scores in 2 orders x 2 precisions, 1/tau in {1, 2, 4}, entropy on p~ or p; worst |S^-S|/(uS): float32 " + std::to_string(w32.ratio) +
                              " (" + w32.where + "), float64 " + std::to_string(w64.ratio) + "; planted n'=2G+P+16 exceeded " +
                              std::to_string(planted_excess) + "x (" + planted_where + ")");
}

TEST(Proof14, Verdict) { report().conclude("14_page_score_error_bound", "proved-and-checked", {"bound"}); }

}  // namespace
