// Shared checks for both builds of the batched selectors on every shipped real dump (data/, every model):
// the CPU build must give the canonical selections; the CUDA build may differ only where the oracle's
// admissibility check accepts its selection (logf and the summation order differ on the device).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "core/compression_ratio.h"
#include "core/gpu/gpu_select.h"
#include "core/io/dump.h"
#include "core/paging/page_score_bound.h"
#include "oracle/chunk_selection.h"
#include "oracle/page_entrokv.h"

namespace kvaudit::gpu::testing {

using SelectFn = std::vector<Selection> (*)(const BatchedScores&, const SelectorParams&);
using PageSelectFn = std::vector<PageSelection> (*)(const BatchedScores&, const PageParams&);

inline std::vector<io::PromptDump> shipped_dumps() {
  if (!std::filesystem::exists("data/manifest.json")) return {};
  return io::load_all_dumps("data");
}

// Layers 0, L/2 and L-1 of prompts longer than 2,048 tokens: always for the exact page oracle (minutes per
// 16k prompt otherwise), and for the chunk selectors under KVAUDIT_SAMPLE_DUMPS=1 (the sanitizer stage of
// scripts/test.sh); every other layer check covers every layer.
inline ScoreTensor sampled_layers(const ScoreTensor& t, bool always = false) {
  const char* v = std::getenv("KVAUDIT_SAMPLE_DUMPS");
  const bool sample = always || (v != nullptr && std::string(v) == "1");
  if (!sample || t.tokens <= 2048 || t.layers <= 3) return t;
  ScoreTensor out{3, t.heads, t.tokens, {}};
  for (Index l : {Index{0}, t.layers / 2, t.layers - 1}) {
    const auto first = t.values.begin() + l * t.heads * t.tokens;
    out.values.insert(out.values.end(), first, first + t.heads * t.tokens);
  }
  return out;
}

struct AgreementCounts {
  Index canonical = 0;
  Index admissible = 0;  // a different selection the oracle's admissibility check accepts
};

// Every (prompt, scorer, ratio, method, layer) of the dumps through `select` against oracle::select.
// `require_canonical`: the build evaluates the oracle's float32 statistics in the same order (CPU build).
inline AgreementCounts check_chunk_dumps(SelectFn select, bool require_canonical,
                                         const std::vector<io::PromptDump>& dumps) {
  AgreementCounts n;
  for (const auto& d : dumps) {
    for (const std::string name : {"scores.snapkv", "scores.expected_attention", "scores.tova"}) {
      if (!d.tensors.count(name)) continue;
      const ScoreTensor t = sampled_layers(d.scores(name));
      for (const std::string rho : {"0.5", "0.75", "0.9"}) {
        for (auto method : {Method::EgChunkKV, Method::ChunkKV}) {
          SelectorParams p;
          p.method = method;
          p.chunk_length = method == Method::EgChunkKV ? 10 : 20;
          p.ratio = parse_compression_ratio(rho);
          const auto got = select(BatchedScores::per_layer(t), p);
          EXPECT_EQ(static_cast<Index>(got.size()), t.layers);
          if (static_cast<Index>(got.size()) != t.layers) return n;
          for (Index l = 0; l < t.layers; ++l) {
            const HeadScores hs{t.heads, t.tokens, t.row(l, 0).first(static_cast<std::size_t>(t.heads * t.tokens))};
            const Selection want = oracle::select(hs, p);
            const std::string where = d.key() + " " + name + " rho " + rho + " " +
                                      method_name(method) + " layer " +
                                      std::to_string(l);
            if (got[l].kept == want.kept) {
              ++n.canonical;
              continue;
            }
            EXPECT_FALSE(require_canonical) << where << ": not the canonical selection";
            if (require_canonical) return n;
            const Verdict v = oracle::check_admissible(hs, p, got[l]);
            EXPECT_TRUE(v.passed()) << where << ": " << to_string(v.kind) << " " << v.rule << ": " << v.message;
            if (!v.passed()) return n;
            ++n.admissible;
          }
        }
      }
    }
  }
  return n;
}

// Page-EntroKV on every prompt's window-mean attention, G from the model; a selection other than the
// oracle's canonical one must be admissible within the float64 page-score bound (both builds score in double).
inline AgreementCounts check_page_dumps(PageSelectFn page_select, const std::vector<io::PromptDump>& dumps) {
  namespace op = oracle::paging;
  AgreementCounts n;
  for (const auto& d : dumps) {
    const ScoreTensor a = sampled_layers(d.scores("attention.window_mean"), /*always=*/true);
    const Index G = d.q_heads / d.kv_heads;
    for (const std::string rho : {"0.8", "0.98"}) {
      PageParams p;
      p.group_size = G;
      p.ratio_text = rho;
      const auto got = page_select(BatchedScores{a.layers * d.kv_heads, G, a.tokens, a.values}, p);
      const op::PagedSelection want = op::page_entrokv(a, p);
      const std::vector<op::Page> pages = op::page_layout(a.tokens, p.page_size);
      for (std::size_t s = 0; s < got.size(); ++s) {
        const std::string where = d.key() + " rho " + rho + " group " + std::to_string(s);
        if (got[s].pages == want.groups[s].kept_pages) {
          EXPECT_EQ(got[s].tokens, want.kept_tokens[s]) << where;
          ++n.canonical;
          continue;
        }
        const op::Exact tol(paging::page_score_rel_bound(paging::ScorePrecision::Float64, a.tokens, G, p.page_size));
        const Verdict v = op::check_pages_admissible(want.groups[s].page_scores, pages, want.groups[s].reserved,
                                                     want.budget, p.greedy, got[s].pages, tol);
        EXPECT_TRUE(v.passed()) << where << ": " << v.rule << ": " << v.message;
        if (!v.passed()) return n;
        ++n.admissible;
      }
    }
  }
  return n;
}

}  // namespace kvaudit::gpu::testing
