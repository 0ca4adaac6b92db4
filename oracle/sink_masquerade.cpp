// The paper's masquerade metric: a census of heads typed by raw sink mass, weighted by group_weights on raw and on
// sink-isolated rows (exact), summed per type.
#include "oracle/sink_masquerade.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "oracle/page_entrokv.h"

namespace kvaudit::oracle::paging {

double MasqueradeCensus::mean_ratio(double sink_sum, Index sinks, double contextual_sum, Index contextuals) {
  if (sinks == 0 || contextuals == 0 || contextual_sum == 0) return NAN;
  return (sink_sum / static_cast<double>(sinks)) / (contextual_sum / static_cast<double>(contextuals));
}

double MasqueradeCensus::ratio_raw() const { return mean_ratio(sink_weight_raw, sink_heads, contextual_weight_raw, contextual_heads); }
double MasqueradeCensus::ratio_isolated() const {
  return mean_ratio(sink_weight_isolated, sink_heads, contextual_weight_isolated, contextual_heads);
}

void MasqueradeCensus::merge(const MasqueradeCensus& o) {
  groups += o.groups, sink_heads += o.sink_heads, contextual_heads += o.contextual_heads;
  sink_weight_raw += o.sink_weight_raw, contextual_weight_raw += o.contextual_weight_raw;
  sink_weight_isolated += o.sink_weight_isolated, contextual_weight_isolated += o.contextual_weight_isolated;
  group_ratio_raw.insert(group_ratio_raw.end(), o.group_ratio_raw.begin(), o.group_ratio_raw.end());
  group_ratio_isolated.insert(group_ratio_isolated.end(), o.group_ratio_isolated.begin(), o.group_ratio_isolated.end());
  groups_no_ratio += o.groups_no_ratio;
  per_group.insert(per_group.end(), o.per_group.begin(), o.per_group.end());
}

MasqueradeCensus masquerade_census(const ScoreTensor& attn, Index group_size, Index n_sink, Index inverse_temperature,
                                   double sink_head_mass) {
  if (group_size < 1 || attn.heads % group_size != 0)
    throw std::invalid_argument("masquerade_census: q_heads is not a multiple of the group size");
  if (inverse_temperature < 1) throw std::invalid_argument("masquerade_census: 1/tau must be >= 1");
  if (!(sink_head_mass > 0 && sink_head_mass <= 1)) throw std::invalid_argument("masquerade_census: sink-head mass outside (0, 1]");
  const Exact threshold(sink_head_mass);  // a double is an exact binary fraction
  const Index sinks = std::min(n_sink, attn.tokens);
  MasqueradeCensus m;
  for (Index l = 0; l < attn.layers; ++l) {
    for (Index g = 0; g < attn.heads / group_size; ++g) {
      ++m.groups;
      std::vector<std::optional<ScaledRow>> raw, isolated;
      std::vector<bool> is_sink;
      for (Index h = g * group_size; h < (g + 1) * group_size; ++h) {
        const auto row = attn.row(l, h);
        raw.push_back(exact_row(row));
        isolated.push_back(sink_isolate(row, n_sink));
        // Masses over the raw row's one denominator: their ratio is that of the numerators' sums.
        Integer total = 0, on_sinks = 0;
        for (Index t = 0; t < attn.tokens; ++t) {
          total += raw.back()->numerators[t];
          if (t < sinks) on_sinks += raw.back()->numerators[t];
        }
        is_sink.push_back(total > 0 && Exact(on_sinks) >= threshold * Exact(total));
      }
      const std::vector<Exact> w_raw = group_weights(raw, PagePooling::Entropy, inverse_temperature);
      const std::vector<Exact> w_iso = group_weights(isolated, PagePooling::Entropy, inverse_temperature);
      double s_raw = 0, s_iso = 0, c_raw = 0, c_iso = 0;
      Index n_sink_heads = 0, n_contextual = 0;
      for (std::size_t h = 0; h < is_sink.size(); ++h) {
        const double wr = w_raw[h].convert_to<double>(), wi = w_iso[h].convert_to<double>();
        if (is_sink[h]) s_raw += wr, s_iso += wi, ++n_sink_heads;
        else c_raw += wr, c_iso += wi, ++n_contextual;
      }
      m.sink_heads += n_sink_heads, m.contextual_heads += n_contextual;
      m.sink_weight_raw += s_raw, m.sink_weight_isolated += s_iso;
      m.contextual_weight_raw += c_raw, m.contextual_weight_isolated += c_iso;
      m.per_group.push_back({n_sink_heads, n_contextual, s_raw, c_raw, s_iso, c_iso});
      if (n_sink_heads == 0 || n_contextual == 0) continue;
      const double r_raw = MasqueradeCensus::mean_ratio(s_raw, n_sink_heads, c_raw, n_contextual), r_iso = MasqueradeCensus::mean_ratio(s_iso, n_sink_heads, c_iso, n_contextual);
      if (std::isnan(r_raw) || std::isnan(r_iso)) {
        ++m.groups_no_ratio;
        continue;
      }
      m.group_ratio_raw.push_back(r_raw);
      m.group_ratio_isolated.push_back(r_iso);
    }
  }
  return m;
}

}  // namespace kvaudit::oracle::paging
