// Template definitions for oracle/chunk_internal.h: medians and the canonical (lower-index) orders.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <type_traits>

namespace kvaudit::oracle::detail {

template <class T>
T median_of(std::vector<T> values, MedianRule rule) {
  if (values.empty()) throw std::invalid_argument("median of an empty list");
  // torch.median is NaN when any value is NaN (kvpress's float32 entropy of a chunk whose rebased sum overflows),
  // and then every comparison with it is false.
  if constexpr (std::is_floating_point_v<T>)
    for (T v : values)
      if (std::isnan(v)) return v;
  std::sort(values.begin(), values.end());
  std::size_t n = values.size();
  std::size_t lower = (n - 1) / 2;  // torch.median: the lower of the two middles for an even count
  if (rule == MedianRule::Lower || n % 2 == 1) return values[lower];
  return (values[lower] + values[lower + 1]) / 2;
}

template <class T>
std::vector<Index> canonical_order(const std::vector<T>& values) {
  std::vector<Index> order(values.size());
  std::iota(order.begin(), order.end(), Index{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](Index a, Index b) { return values[static_cast<std::size_t>(a)] > values[static_cast<std::size_t>(b)]; });
  return order;
}

template <class T>
std::vector<Index> canonical_top_k(const std::vector<T>& values, std::vector<Index> positions, Index k) {
  std::sort(positions.begin(), positions.end());
  std::stable_sort(positions.begin(), positions.end(), [&](Index a, Index b) {
    return values[static_cast<std::size_t>(a)] > values[static_cast<std::size_t>(b)];
  });
  positions.resize(static_cast<std::size_t>(std::min<Index>(k, static_cast<Index>(positions.size()))));
  return positions;
}

}  // namespace kvaudit::oracle::detail
