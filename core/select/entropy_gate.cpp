// Exact spiky gate from fast entropies (see entropy_gate.h).
#include "core/select/entropy_gate.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace kvaudit::select::detail {


float settle_median_gate(const float* x, const ChunkGeometry& g, std::span<float> entropy, double margin,
                         std::span<float> buf, std::span<Index> band) {
  const Index nc = g.n_chunks, k = (nc - 1) / 2;
  const float tau_fast = median<float>(entropy.first(static_cast<std::size_t>(nc)), MedianRule::Lower, buf);
  // In float: d = fl(H - tau_fast) is monotone in H, so d < -w (w >= 2e, a float) implies H < tau_fast - 2e
  // and d > w implies H > tau_fast + 2e; the band |d| <= w holds everything else.
  const float w = std::nextafter(static_cast<float>(2.0 * margin), 1.0f);
  const float* v = entropy.data();
  Index below = 0, m = 0;
#pragma omp simd reduction(+ : below)
  for (Index i = 0; i < nc; ++i) below += (v[i] - tau_fast) < -w;
  for (Index i = 0; i < nc; ++i)  // one compare, almost never true: a well-predicted branch
    if (std::fabs(v[i] - tau_fast) <= w) band[m++] = i;
  for (Index t = 0; t < m; ++t) {
    const Index i = band[t];
    entropy[i] = kvpress_chunk_entropy(x, g, i);
    buf[t] = entropy[i];
  }
  // The exact median's chunk is in the band and every chunk counted below lies strictly under it.
  if (!(below <= k && k - below < m)) throw std::logic_error("settle_median_gate: the exact median left the band");
  std::nth_element(buf.begin(), buf.begin() + (k - below), buf.begin() + m);
  return buf[k - below];
}

}  // namespace kvaudit::select::detail
