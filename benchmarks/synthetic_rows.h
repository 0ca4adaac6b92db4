// Synthetic attention-like rows for the partition benchmarks: a sink-heavy softmax over normal logits, bucketed.
#pragma once

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace kvaudit::bench {

// `tokens` logits (a strong sink at 0, a warm recent window), softmaxed and summed into `buckets` contiguous masses.
inline std::vector<double> attention_row(int tokens, int buckets, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  std::vector<double> logit(static_cast<std::size_t>(tokens));
  for (int i = 0; i < tokens; ++i) logit[i] = 1.5 * z(rng) + (i == 0 ? 8.0 : 0.0) + (i > tokens - 16 ? 3.0 : 0.0);
  double top = *std::max_element(logit.begin(), logit.end()), s = 0.0;
  for (double& x : logit) s += (x = std::exp(x - top));
  std::vector<double> p(static_cast<std::size_t>(buckets), 0.0);
  for (int i = 0; i < tokens; ++i) p[static_cast<std::size_t>(static_cast<long>(i) * buckets / tokens)] += logit[i] / s;
  return p;
}

}  // namespace kvaudit::bench
