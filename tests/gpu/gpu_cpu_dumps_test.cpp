// The CPU build of the batched GPU selectors against the oracles on every shipped real dump (data/, every model).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/compression_ratio.h"
#include "core/paging/page_score_bound.h"
#include "core/gpu/gpu_select.h"
#include "core/io/dump.h"
#include "oracle/chunk_selection.h"
#include "oracle/page_entrokv.h"

namespace kvaudit::gpu {
namespace {

std::vector<io::PromptDump> dumps_or_skip() {
  if (!std::filesystem::exists("data/manifest.json")) return {};
  return io::load_all_dumps("data");
}

// Layers 0, L/2 and L-1 of prompts longer than 2,048 tokens: always for the exact page oracle (minutes per
// 16k prompt otherwise), and for the chunk selectors under KVAUDIT_SAMPLE_DUMPS=1 (the sanitizer stage of
// scripts/test.sh); every other layer check covers every layer.
ScoreTensor sampled_layers(const ScoreTensor& t, bool always = false) {
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

// kvpress flavour: the CPU build evaluates the oracle's float32 statistics in the same order, so every layer
// must give the canonical selection exactly.
TEST(GpuCpuDumps, ChunkSelectorsEqualOracleOnRealScores) {
  const auto dumps = dumps_or_skip();
  if (dumps.empty()) GTEST_SKIP() << "no data/manifest.json: no real dumps shipped";
  Index layers_checked = 0;
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
          const auto got = cpu::select(BatchedScores::per_layer(t), p);
          ASSERT_EQ(static_cast<Index>(got.size()), t.layers);
          for (Index l = 0; l < t.layers; ++l) {
            const HeadScores hs{t.heads, t.tokens, t.row(l, 0).first(static_cast<std::size_t>(t.heads * t.tokens))};
            const Selection want = oracle::select(hs, p);
            ASSERT_EQ(got[l].kept, want.kept) << d.key() << " " << name << " rho " << rho << " layer " << l;
            ++layers_checked;
          }
        }
      }
    }
  }
  ASSERT_GT(layers_checked, 0) << "dumps present but no score tensor found";
  std::cout << "[ gpu-cpu ] " << layers_checked << " (prompt, scorer, ratio, method, layer) selections equal\n";
}

TEST(GpuCpuDumps, PageEntroKvMatchesOracleOnRealAttention) {
  const auto dumps = dumps_or_skip();
  if (dumps.empty()) GTEST_SKIP() << "no data/manifest.json: no real dumps shipped";
  namespace op = oracle::paging;
  Index canonical = 0, admissible = 0;
  for (const auto& d : dumps) {
    const ScoreTensor a = sampled_layers(d.scores("attention.window_mean"), /*always=*/true);
    const Index G = d.q_heads / d.kv_heads;
    for (const std::string rho : {"0.8", "0.98"}) {
      PageParams p;
      p.group_size = G;
      p.ratio_text = rho;
      const PageParams& o = p;
      const auto got = cpu::page_select(BatchedScores{a.layers * d.kv_heads, G, a.tokens, a.values}, p);
      const op::PagedSelection want = op::page_entrokv(a, o);
      const std::vector<op::Page> pages = op::page_layout(a.tokens, o.page_size);
      for (std::size_t s = 0; s < got.size(); ++s) {
        if (got[s].pages == want.groups[s].kept_pages) {
          ASSERT_EQ(got[s].tokens, want.kept_tokens[s]);
          ++canonical;
          continue;
        }
        const Verdict v = op::check_pages_admissible(want.groups[s].page_scores, pages, want.groups[s].reserved,
                                                     want.budget, o.greedy, got[s].pages,
                                                     op::Exact(paging::page_score_rel_bound(paging::ScorePrecision::Float64, a.tokens, G, p.page_size)));
        ASSERT_TRUE(v.passed()) << d.key() << " group " << s << ": " << v.rule << ": " << v.message;
        ++admissible;
      }
    }
  }
  std::cout << "[ gpu-cpu ] page selections: " << canonical << " canonical, " << admissible
            << " admissible within the float64 page-score bound only\n";
  ASSERT_GT(canonical + admissible, 0);
}

}  // namespace
}  // namespace kvaudit::gpu
