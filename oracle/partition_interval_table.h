// h(mass of (a, b]) in double for every interval of a partition problem, tabulated once (n(n+1)/2 values).
#pragma once

#include <cstddef>
#include <vector>

#include "oracle/partition_arith.h"

namespace kvaudit::oracle {

// h of every interval (a, b], a < b, stored by row.
class IntervalTable {
 public:
  explicit IntervalTable(const ExactPrefix& prefix) : n_(prefix.size()) {
    start_.resize(static_cast<std::size_t>(n_ + 1));
    std::size_t at = 0;
    for (Index a = 0; a <= n_; ++a) {
      start_[a] = at;
      at += static_cast<std::size_t>(n_ - a);
    }
    h_.resize(at);
    for (Index a = 0; a < n_; ++a)
      for (Index b = a + 1; b <= n_; ++b) h_[start_[a] + (b - a - 1)] = prefix.h(a, b);
  }
  double operator()(Index a, Index b) const { return h_[start_[a] + static_cast<std::size_t>(b - a - 1)]; }
  // H of the partition with full boundaries 0 = b_0 < ... < b_m = n, summed in double in group order (the
  // evaluation entropy_error_bound covers).
  double entropy(const std::vector<Index>& bounds) const {
    double H = 0.0;
    for (std::size_t k = 1; k < bounds.size(); ++k) H += (*this)(bounds[k - 1], bounds[k]);
    return H;
  }

 private:
  Index n_;
  std::vector<std::size_t> start_;
  std::vector<double> h_;
};

}  // namespace kvaudit::oracle
