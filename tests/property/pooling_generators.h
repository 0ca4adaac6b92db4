// RapidCheck generators for pooling properties: probability vectors with zeros, duplicates, one dominant
// mass, uniform rows and arbitrary rows, and budgets drawn to hit the interesting regimes (exactly a
// partition's entropy, log2(m) fractions, the DP extremes).
#pragma once

#include <rapidcheck.h>

#include <cmath>
#include <ostream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/types.h"
#include "oracle/partition_arith.h"
#include "oracle/partition_exact.h"

namespace kvaudit::pooling_test {

struct Case {
  std::string kind;
  std::vector<double> p;
  Index m = 1;
  double R = 0.0;
};

inline void showValue(const Case& c, std::ostream& os) {
  os << c.kind << " n=" << c.p.size() << " m=" << c.m << " R=" << c.R << " p=[";
  os.precision(17);
  for (double x : c.p) os << x << ' ';
  os << ']';
}

inline std::vector<double> normalize(const std::vector<int>& w) {
  double s = 0.0;
  for (int x : w) s += x;
  std::vector<double> p;
  for (int x : w) p.push_back(s > 0 ? x / s : 1.0 / static_cast<double>(w.size()));
  return p;
}

// Integer weights -> probabilities: equal weights give bitwise-equal probabilities (exact ties). n in
// [min_n, max_n] (the range scales with RapidCheck's size, from min_n up).
inline rc::Gen<Case> genCase(int max_n, bool free_form, int min_n = 1) {
  return rc::gen::exec([=] {
    Case c;
    const int n = *rc::gen::inRange(min_n, max_n + 1);
    const int kind = *rc::gen::element(0, 1, 2, 3, 4);
    std::vector<int> w(static_cast<std::size_t>(n));
    switch (kind) {
      case 0:
        c.kind = "zeros";
        for (int& x : w) x = *rc::gen::weightedElement<int>({{3, 0}, {2, 1}, {1, 5}, {1, 40}});
        break;
      case 1:
        c.kind = "duplicates";
        for (int& x : w) x = *rc::gen::element(1, 2, 3, 8);
        break;
      case 2:
        c.kind = "dominant";
        for (int& x : w) x = *rc::gen::inRange(0, 6);
        w[*rc::gen::inRange(0, n)] = 1000;
        break;
      case 3:
        c.kind = "uniform";
        for (int& x : w) x = 1;
        break;
      default:
        c.kind = "arbitrary";
        for (int& x : w) x = *rc::gen::inRange(0, 1 << 20);
        break;
    }
    c.p = normalize(w);
    c.m = free_form ? 1 : *rc::gen::inRange(1, n + 1);
    // Budgets: the exact entropy of some partition (a tie at the budget), a log2(m) fraction, the DP extremes
    // (boundary of feasibility), or arbitrary.
    const int rk = *rc::gen::element(0, 1, 2, 3, 4);
    const oracle::ExactPrefix prefix(c.p);
    if (rk == 0) {
      std::set<Index> cuts;
      for (Index k = 1; k < c.m; ++k) cuts.insert(*rc::gen::inRange<Index>(1, n));
      std::vector<Index> b{0};
      b.insert(b.end(), cuts.begin(), cuts.end());
      b.push_back(n);
      c.R = prefix.entropy_extended(b);
    } else if (rk == 1) {
      c.R = std::log2(static_cast<double>(std::max<Index>(c.m, 2))) * *rc::gen::element(0.5, 0.75, 1.0);
    } else if (rk == 2 && !free_form) {
      const auto ext = oracle::entropy_extremes(c.p, c.m);
      c.R = *rc::gen::element(ext.min_bits, ext.max_bits);
    } else {
      c.R = *rc::gen::inRange(0, 1000) / 1000.0 * std::log2(static_cast<double>(n) + 1.0);
    }
    return c;
  });
}

}  // namespace kvaudit::pooling_test
