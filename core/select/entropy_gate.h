// EG-ChunkKV's spiky gate `H~_i < tau`, tau the lower median of H~, decided exactly from fast entropies.
//
// The lanes path computes H~ within a margin e of the glibc-logf value (chunk_stats.h). The exact lower
// median lies within e of the fast one (an order statistic moves by at most the largest perturbation), so
// only chunks whose fast H~ lies within 2e of the fast median can compare differently with it: those are
// recomputed exactly, and tau is read off them by rank. Every other chunk lies strictly on one side of the
// exact median, with its fast value on the same side. Afterwards `entropy[i] < tau` equals the exact gate
// for every chunk, so the walk gives the oracle's selection bit for bit.
#pragma once

#include <span>
#include <vector>

#include "core/select/chunk_stats.h"

namespace kvaudit::select::detail {

// `entropy` holds fast H~ (within `margin` of exact); chunks near the median are overwritten with their
// exact value. Returns the exact lower median. `buf` >= n_chunks floats, `band` >= n_chunks indices.
float settle_median_gate(const float* x, const ChunkGeometry& g, std::span<float> entropy, double margin,
                         std::span<float> buf, std::span<Index> band);

}  // namespace kvaudit::select::detail
