// Check of proofs/01_merge_delta.md: Delta(a,b) = h(a)+h(b)-h(a+b) >= 0 with equality iff a = 0 or b = 0, the
// binary-entropy form Delta = (a+b) H_b(a/(a+b)) <= a+b, and the telescoping identity over merge sequences.
// Extended precision (MPFR, 333 bits) with the named bound kDeltaErrorBound; no double tolerance anywhere.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <boost/multiprecision/mpfr.hpp>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "oracle/partition_merge_delta.h"
#include "proofs/proof_report.h"

namespace {
using Real = boost::multiprecision::mpfr_float_100;
using kvaudit::Index;
using kvaudit::proofs::report;

// Each Delta evaluation is <= 12 correctly rounded MPFR operations on magnitudes <= 4 at 333 bits: absolute
// error <= 12 * 4 * 2^-333 < 2^-327. 2^-300 leaves a wide margin and is still far below every non-zero
// Delta on the grid (the smallest, Delta(1/256, 255/256), is about 0.037).
const Real kDeltaErrorBound = boost::multiprecision::ldexp(Real(1), -300);

Real h(const Real& x) { return x > 0 ? Real(-x * boost::multiprecision::log2(x)) : Real(0); }
Real delta(const Real& a, const Real& b) { return h(a) + h(b) - h(a + b); }
Real abs_r(const Real& x) { return x < 0 ? Real(-x) : x; }

TEST(Proof01, GridDeltaSignEqualityAndBinaryEntropyForm) {
  long pairs = 0, zero = 0, positive = 0, at_max = 0;
  for (int i = 0; i <= 256; ++i) {
    for (int j = 0; i + j <= 256; ++j) {
      const double a = i / 256.0, b = j / 256.0;  // exact binary fractions
      const Real d = delta(Real(a), Real(b));
      ++pairs;
      if (i == 0 || j == 0) {
        ASSERT_TRUE(d == 0) << "Delta(" << a << "," << b << ") must be exactly 0";
        ++zero;
      } else {
        ASSERT_GT(d, kDeltaErrorBound) << "Delta(" << a << "," << b << ") not certified positive";
        ++positive;
        // (M2): Delta <= a + b, equality iff a = b.
        const Real gap = Real(a) + Real(b) - d;
        ASSERT_GE(gap, -kDeltaErrorBound);
        if (i == j) {
          ASSERT_LE(abs_r(gap), kDeltaErrorBound);
          ++at_max;
        } else {
          ASSERT_GT(gap, kDeltaErrorBound);
        }
        // (M2): the binary-entropy form.
        const Real s = Real(a) + Real(b), t = Real(a) / s;
        const Real hb = h(t) + h(1 - t);
        ASSERT_LE(abs_r(d - s * hb), 4 * kDeltaErrorBound);
      }
      // The oracle's double result is the 333-bit value rounded: within one ulp of ours.
      const double o = kvaudit::oracle::merge_delta(a, b);
      const double mine = d.convert_to<double>();
      ASSERT_LE(std::fabs(o - mine), std::nextafter(std::fabs(mine), INFINITY) - std::fabs(mine))
          << "oracle merge_delta(" << a << "," << b << ")";
    }
  }
  report().cover("grid", std::to_string(pairs) + " pairs (i/256, j/256), i+j<=256: " + std::to_string(zero) +
                             " exact zeros, " + std::to_string(positive) + " certified > 2^-300, " +
                             std::to_string(at_max) + " with Delta = a+b (a=b)");
}

// The check's own bookkeeping: blocks as exact masses, H recomputed from scratch after each merge.
struct Blocks {
  std::vector<Real> mass;
  std::vector<Index> end;
  Real entropy() const {
    Real H = 0;
    for (const Real& m : mass) H += h(m);
    return H;
  }
};

Blocks singletons(const std::vector<double>& p) {
  Blocks b;
  for (std::size_t i = 0; i < p.size(); ++i) b.mass.emplace_back(p[i]), b.end.push_back(static_cast<Index>(i + 1));
  return b;
}

// Applies `seq` step by step: H(after) = H(start) - sum Delta at every step, and the oracle agrees.
// Returns "" or what failed (usable from gtest and from RapidCheck alike).
std::string check_sequence(const std::vector<double>& p, const std::vector<Index>& seq) {
  Blocks b = singletons(p);
  const Real start = b.entropy();
  Real sum_delta = 0;
  std::vector<kvaudit::oracle::MergeStep> steps;
  for (Index left : seq) {
    const Real d = delta(b.mass[left], b.mass[left + 1]);
    if (d < -kDeltaErrorBound) return "negative Delta";
    sum_delta += d;
    b.mass[left] += b.mass[left + 1];
    b.end[left] = b.end[left + 1];
    b.mass.erase(b.mass.begin() + left + 1);
    b.end.erase(b.end.begin() + left + 1);
    steps.push_back({left});
    const Real after = b.entropy();
    if (abs_r(start - sum_delta - after) > Real(static_cast<double>(p.size() + seq.size())) * kDeltaErrorBound)
      return "H(after) != H(start) - sum Delta";
    if (after > start + kDeltaErrorBound) return "entropy rose after a merge";
  }
  const auto book = kvaudit::oracle::merge_bookkeeping(p, steps);
  if (!book.all_deltas_nonnegative) return "oracle: a Delta < 0";
  if (book.max_residual_extended > kvaudit::oracle::kMergeResidualBound) return "oracle: 332-bit residual above 2^-300";
  if (book.final_cuts != std::vector<Index>(b.end.begin(), b.end.end() - 1)) return "oracle: final cuts differ";
  return "";
}

TEST(Proof01, EveryMergeOrderUpToSix) {
  const std::vector<std::vector<double>> weights = {{0, 3, 0, 5, 3, 5}, {1, 1, 1, 1, 1, 1}, {8, 4, 2, 1, 1, 0}};
  long sequences = 0, steps = 0;
  for (std::size_t n = 2; n <= 6; ++n) {
    for (const auto& w : weights) {
      std::vector<double> p(w.begin(), w.begin() + static_cast<long>(n));
      const double total = std::accumulate(p.begin(), p.end(), 0.0);
      if (total == 0) continue;
      for (double& x : p) x /= total;  // the masses are these doubles, taken exactly
      // Mixed radix: step t chooses left in [0, n-1-t).
      std::vector<Index> seq(n - 1, 0);
      while (true) {
        ASSERT_EQ(check_sequence(p, seq), "") << "n=" << n;
        ++sequences;
        steps += static_cast<long>(seq.size());
        int t = static_cast<int>(seq.size()) - 1;
        while (t >= 0 && seq[t] + 1 >= static_cast<Index>(n) - 1 - t) seq[t--] = 0;
        if (t < 0) break;
        ++seq[t];
      }
    }
  }
  // sum over n=2..6 of (n-1)! = 1+2+6+24+120 = 153 orders per vector, 3 vectors.
  ASSERT_EQ(sequences, 3 * 153);
  report().cover("orders", "every merge order for n=2..6 on 3 vectors (zeros, ties): " + std::to_string(sequences) +
                               " sequences, " + std::to_string(steps) + " merge steps");
}

TEST(Proof01, RandomSequencesRapidCheck) {
  long cases = 0, with_zero = 0;
  const bool ok = rc::check("telescoping merge identity", [&] {
    const auto n = *rc::gen::inRange<int>(2, 41);
    const auto pool = rc::gen::element(0.0, 0.0, 0.5, 0.25, 0.125, 0.1, 1.0 / 3.0, 1e-6, 0.7);
    auto p = *rc::gen::container<std::vector<double>>(static_cast<std::size_t>(n), pool);
    std::vector<Index> seq;
    for (int k = n; k > 1; --k) {
      if (*rc::gen::inRange(0, 4) == 0) break;  // stop early sometimes: partial sequences
      seq.push_back(*rc::gen::inRange<Index>(0, k - 1));
    }
    const bool zero = std::count(p.begin(), p.end(), 0.0) > 0;
    RC_CLASSIFY(zero, "has zero mass");
    RC_ASSERT(check_sequence(p, seq) == std::string());
    ++cases;
    with_zero += zero;
  });
  ASSERT_TRUE(ok);
  report().cover("random", std::to_string(cases) + " RapidCheck cases, n in [2,40], " + std::to_string(with_zero) +
                               " with zero masses");
}

TEST(Proof01, Verdict) {
  report().conclude("01_merge_delta", "proved-and-checked", {"grid", "orders", "random"});
}

}  // namespace
