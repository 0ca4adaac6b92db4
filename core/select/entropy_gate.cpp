// Exact spiky gate from fast entropies (see entropy_gate.h).
#include "core/select/entropy_gate.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace kvaudit::select::detail {


float lower_median(std::span<const float> values, std::span<float> buf) {
  // Narrowing by sampling: a sorted sample of the current candidates brackets the k-th value between two
  // pivots, one vectorizable counting pass checks the bracket, and the values inside it (about 1/8) become
  // the candidates. A bracket that misses (an unlucky sample) stops the narrowing early; correctness never
  // depends on the sample.
  Index k = (static_cast<Index>(values.size()) - 1) / 2;
  const float* cur = values.data();
  Index n = static_cast<Index>(values.size());
  constexpr Index kSample = 128, kHalfWidth = 8, kSmall = 512;
  while (n > kSmall) {
    float sample[kSample];
    for (Index s = 0; s < kSample; ++s) sample[s] = cur[s * (n / kSample)];
    std::sort(sample, sample + kSample);
    const Index at = k * kSample / n;
    const float lo = sample[std::max<Index>(at - kHalfWidth, 0)], hi = sample[std::min(at + kHalfWidth, kSample - 1)];
    Index below = 0, inside = 0;
#pragma omp simd reduction(+ : below, inside)
    for (Index i = 0; i < n; ++i) {
      below += cur[i] < lo;
      inside += (cur[i] >= lo) & (cur[i] <= hi);
    }
    if (!(below <= k && k < below + inside) || inside == n) break;
    Index m = 0;
    for (Index i = 0; i < n; ++i) {  // branch-free compaction (in place once cur is buf)
      const float v = cur[i];
      buf[m] = v;
      m += (v >= lo) & (v <= hi);
    }
    cur = buf.data();
    n = m;
    k -= below;
  }
  if (cur != buf.data()) std::copy(cur, cur + n, buf.begin());
  std::nth_element(buf.begin(), buf.begin() + k, buf.begin() + n);
  return buf[k];
}

float settle_median_gate(const float* x, const ChunkGeometry& g, std::span<float> entropy, double margin,
                         std::span<float> buf, std::span<Index> band) {
  const Index nc = g.n_chunks, k = (nc - 1) / 2;
  const float tau_fast = lower_median(entropy.first(static_cast<std::size_t>(nc)), buf);
  // In float: d = fl(H - tau_fast) is monotone in H, so d < -w (w >= 2e, a float) implies H < tau_fast - 2e
  // and d > w implies H > tau_fast + 2e; the band |d| <= w holds everything else.
  const float w = std::nextafter(static_cast<float>(2.0 * margin), 1.0f);
  const float* v = entropy.data();
  Index below = 0, m = 0;
#pragma omp simd reduction(+ : below)
  for (Index i = 0; i < nc; ++i) below += (v[i] - tau_fast) < -w;
  for (Index i = 0; i < nc; ++i)  // one compare, almost never true: a well-predicted branch
    if (std::fabs(v[i] - tau_fast) <= w) band[m++] = i;
  const float log_c = log_of_length(g.chunk_length);
  for (Index t = 0; t < m; ++t) {
    const Index i = band[t];
    entropy[i] = kvpress_chunk_entropy(x + g.begin(i), g.size(i), g.size(i) == g.chunk_length ? log_c
                                                                                            : log_of_length(g.size(i)));
    buf[t] = entropy[i];
  }
  // The exact median's chunk is in the band and every chunk counted below lies strictly under it.
  if (!(below <= k && k - below < m)) throw std::logic_error("settle_median_gate: the exact median left the band");
  std::nth_element(buf.begin(), buf.begin() + (k - below), buf.begin() + m);
  return buf[k - below];
}

}  // namespace kvaudit::select::detail
