// Plain summary statistics of measured values, for the stages' tables: NaN for no values (rendered as a dash).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace kvaudit::audit {

inline double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? NAN : sum / static_cast<double>(v.size());
}

inline double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace kvaudit::audit
