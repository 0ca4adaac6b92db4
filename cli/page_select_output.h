// `kvaudit page-select`'s JSON for one layer's selection, shared by the CLI and the Python front end.
#pragma once

#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "audit/paging_findings.h"
#include "cli/float32_input.h"
#include "core/paging/page_selector.h"

namespace kvaudit::cli {

inline nlohmann::json describe_page_selection(const paging::PageSelection& s, const paging::PageParams& p,
                                              const std::string& pooling, const std::string& page_score,
                                              const audit::SelectorComparison& c, const Float32Input& precision) {
  nlohmann::json groups = nlohmann::json::array();
  Index total_pages = 0, total_tokens = 0;
  for (Index g = 0; g < s.groups; ++g) {
    nlohmann::json w = nlohmann::json::array(), h2 = nlohmann::json::array(), heads = nlohmann::json::array();
    for (Index h = g * p.group_size; h < (g + 1) * p.group_size; ++h) {
      heads.push_back(h);
      w.push_back(s.weights[static_cast<std::size_t>(h)]);
      const double col = s.collision[static_cast<std::size_t>(h)];
      h2.push_back(col > 0 ? nlohmann::json(-std::log(col)) : nlohmann::json(nullptr));
    }
    const auto kept = s.kept_pages(0, g);
    const Index retained = s.retained[static_cast<std::size_t>(g)];
    total_pages += static_cast<Index>(kept.size());
    total_tokens += retained;
    groups.push_back({{"group", g}, {"heads", heads}, {"weights", w}, {"renyi2_sink_isolated", h2}, {"kept_pages", kept},
                      {"kept_page_count", kept.size()}, {"retained_tokens", retained}});
  }
  return {{"tokens", s.tokens},
          {"page_size", s.page_size},
          {"pages", s.pages},
          {"budget", s.budget},
          {"compression_ratio", p.ratio.text},
          {"pooling", pooling},
          {"page_score", page_score},
          {"sinks", p.n_sink},
          {"precision", precision.describe()},
          {"groups", groups},
          {"total_kept_pages", total_pages},
          {"ledger_kept_tuples", s.kept_total()},
          {"total_retained_tokens", total_tokens},
          {"oracle", {{"verdict", to_string(c.verdict.kind)}, {"rule", c.verdict.rule}, {"message", c.verdict.message},
                      {"canonical", c.canonical}, {"tie_admissible", c.tie_admissible}}}};
}

}  // namespace kvaudit::cli
