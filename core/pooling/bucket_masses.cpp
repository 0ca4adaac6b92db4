// Contiguous equal-width bucketing of a normalized row (see bucket_masses.h).
#include "core/pooling/bucket_masses.h"

namespace kvaudit::pooling {

std::vector<double> bucket_masses(std::span<const float> row, Index buckets) {
  std::vector<double> p(static_cast<std::size_t>(buckets), 0.0);
  const Index T = static_cast<Index>(row.size());
  double s = 0.0;
  for (Index i = 0; i < T; ++i) s += row[i];
  for (Index i = 0; i < T; ++i) p[static_cast<std::size_t>(i * buckets / T)] += row[i] / s;
  return p;
}

}  // namespace kvaudit::pooling
