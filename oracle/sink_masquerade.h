// The Page-EntroKV paper's masquerade metric (PageEntro-KV paper/main.tex @1a4fcf1c, subsec:pilot-ablations,
// fig:pilot_weights): heads typed by their raw sink mass, and the mean Boltzmann weight of the sink heads against
// that of the contextual heads, once with entropies of the raw rows and once of the sink-isolated rows.
#pragma once

#include <vector>

#include "core/types.h"

namespace kvaudit::oracle::paging {

// The census of one or more (layers, q_heads, T) tensors. A head is a *sink head* when its raw mass on the first
// n_sink positions is at least `sink_head_mass` of its raw mass (the paper types by sink mass but states no
// threshold); every other head is *contextual* (the paper's third type, retrieval heads, has no stated criterion,
// so those heads count as contextual here). A head's weight is its within-group weight of group_weights
// (oracle/page_entrokv.h): w_h = exp(-H2_h / tau) / sum over the KV group, H2 the collision entropy of the raw row
// ("raw") or of the sink-isolated row ("isolated"), exact, then rounded once to double.
struct MasqueradeCensus {
  Index groups = 0;                               // (layer, KV group) units
  Index sink_heads = 0, contextual_heads = 0;     // population sizes
  double sink_weight_raw = 0, contextual_weight_raw = 0;            // population sums of the weights
  double sink_weight_isolated = 0, contextual_weight_isolated = 0;
  // Per (layer, KV group) holding at least one head of each type: mean sink weight / mean contextual weight.
  // A group whose contextual heads all weigh 0 (either way) has no ratio and is counted in `groups_no_ratio`.
  std::vector<double> group_ratio_raw, group_ratio_isolated;
  Index groups_no_ratio = 0;
  // Every (layer, KV group) in (layer, group) order: its heads of each type and their summed weights (the totals
  // above are these summed; a caller resamples them for an interval).
  struct Group {
    Index sink_heads = 0, contextual_heads = 0;
    double sink_raw = 0, contextual_raw = 0, sink_isolated = 0, contextual_isolated = 0;
  };
  std::vector<Group> per_group;

  // The paper's figure: population mean weight of sink heads / of contextual heads (0.303 / 0.144 = 2.10x raw,
  // 0.116 / 0.176 = 0.66x isolated). NaN when a population is empty or the contextual mean is 0.
  double ratio_raw() const;
  double ratio_isolated() const;
  // The paper's population ratio of any sums: (sink_sum / sinks) / (contextual_sum / contextuals), NaN when undefined.
  static double mean_ratio(double sink_sum, Index sinks, double contextual_sum, Index contextuals);
  void merge(const MasqueradeCensus& other);
};

// The census of `attn` (layers, q_heads, T), KV groups of `group_size` consecutive query heads, tau = 1 /
// inverse_temperature (the paper: tau = 0.5, inverse 2). Throws std::invalid_argument when q_heads is not a
// multiple of group_size, inverse_temperature < 1 or sink_head_mass is outside (0, 1].
MasqueradeCensus masquerade_census(const ScoreTensor& attn, Index group_size, Index n_sink, Index inverse_temperature,
                                   double sink_head_mass);

}  // namespace kvaudit::oracle::paging
