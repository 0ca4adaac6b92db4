// Check of proofs/05_page_accounting.md: page-aligned selection never exceeds the token budget (any order,
// any page size, both greedy rules), keeps whole pages only, and its ledger accounts exactly; B - P < retained
// unless every page is kept. Exhaustive over walk orders on small contexts, RapidCheck end to end.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "oracle/page_entrokv.h"
#include "proofs/proof_report.h"

namespace {
using kvaudit::Index;
using kvaudit::Positions;
using kvaudit::proofs::report;
namespace pg = kvaudit::oracle::paging;

// (A1), (A2), (A4) for one kept page set, from the check's own arithmetic; "" when they hold.
std::string check_kept(const std::vector<pg::Page>& pages, const std::vector<Index>& kept, Index T, Index P, Index B) {
  Index retained = 0;
  std::vector<bool> in(pages.size(), false);
  for (Index j : kept) {
    if (in[j]) return "page kept twice";
    in[j] = true;
    retained += pages[j].size();
  }
  if (retained > B) return "A1: retained " + std::to_string(retained) + " > budget " + std::to_string(B);
  Positions X;
  for (Index j : kept)
    for (Index t = pages[j].begin; t < pages[j].end; ++t) X.push_back(t);
  std::vector<Index> touched;
  for (Index t : X) touched.push_back(t / P);
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  if (static_cast<Index>(X.size()) != retained) return "A2: |X| != retained";
  if (touched.size() != kept.size()) return "A2: distinct t/P != |K|";
  const bool all = kept.size() == pages.size();
  if (all && retained != T) return "all pages kept but retained != T";
  if (!all && !(retained > B - P)) return "A4: retained " + std::to_string(retained) + " <= B - P";
  return "";
}

pg::PageLedger one_group_ledger(std::size_t n_pages, const std::vector<Index>& kept) {
  pg::PageLedger l{1, 1, static_cast<Index>(n_pages), std::vector<std::uint8_t>(n_pages, 0)};
  for (Index j : kept) l.kept[j] = 1;
  return l;
}

TEST(Proof05, EveryWalkOrderSmallContexts) {
  constexpr Index kMaxT = 13;
  constexpr std::size_t kExhaustivePages = 6;  // all permutations up to 6! = 720
  std::mt19937_64 rng(20240805);               // seeded: reproducible
  long walks = 0, exhaustive_orders = 0, sampled_orders = 0, not_all_kept = 0, flips = 0;
  for (Index T = 1; T <= kMaxT; ++T) {
    for (Index P = 1; P <= T + 1; ++P) {
      const auto pages = pg::page_layout(T, P);
      for (Index n_sink : {0, 1, 5}) {
        const auto reserved = pg::reserved_pages(pages, n_sink, kvaudit::SinkPages::Reserved);
        std::vector<Index> free;
        for (std::size_t j = 0; j < pages.size(); ++j)
          if (!reserved[j]) free.push_back(static_cast<Index>(j));
        std::vector<std::vector<Index>> orders;
        if (free.size() <= kExhaustivePages) {
          std::vector<Index> o = free;
          do orders.push_back(o);
          while (std::next_permutation(o.begin(), o.end()));
          exhaustive_orders += static_cast<long>(orders.size());
        } else {
          for (int r = 0; r < 50; ++r) {
            std::vector<Index> o = free;
            std::shuffle(o.begin(), o.end(), rng);
            orders.push_back(o);
          }
          sampled_orders += 50;
        }
        for (const auto& order : orders) {
          // Distinct scores that make the oracle's walk visit the free pages in exactly `order`.
          std::vector<pg::Exact> scores(pages.size(), pg::Exact(0));
          for (std::size_t r = 0; r < order.size(); ++r) scores[order[r]] = pg::Exact(static_cast<long>(order.size() - r));
          for (Index B = 1; B <= T; ++B) {
            for (auto rule : {kvaudit::GreedyRule::SkipMisfits, kvaudit::GreedyRule::StopAtFirstMisfit}) {
              const auto kept = pg::select_pages(scores, pages, reserved, B, rule);
              const std::string err = check_kept(pages, kept, T, P, B);
              ASSERT_EQ(err, "") << "T=" << T << " P=" << P << " B=" << B << " n_sink=" << n_sink;
              Positions X;
              for (Index j : kept)
                for (Index t = pages[j].begin; t < pages[j].end; ++t) X.push_back(t);
              auto ledger = one_group_ledger(pages.size(), kept);
              ASSERT_TRUE(pg::check_page_accounting(ledger, {X}, T, P, B).passed());
              // A ledger that disagrees with the token set by one tuple must be rejected.
              const Index j = static_cast<Index>((walks * 7) % static_cast<long>(pages.size()));
              ledger.kept[j] ^= 1;
              ASSERT_FALSE(pg::check_page_accounting(ledger, {X}, T, P, B).passed());
              ++flips;
              not_all_kept += kept.size() < pages.size();
              ++walks;
            }
          }
        }
      }
    }
  }
  ASSERT_GT(not_all_kept, 0);
  report().cover("orders", std::to_string(walks) + " walks (T<=13, P=1..T+1, B=1..T, 2 rules, n_sink in {0,1,5}); " +
                               std::to_string(exhaustive_orders) + " exhaustive + " + std::to_string(sampled_orders) +
                               " seeded-random visiting orders; " + std::to_string(not_all_kept) +
                               " walks left pages out (A4 exercised); " + std::to_string(flips) + " flipped ledgers rejected");
}

TEST(Proof05, EndToEndRapidCheck) {
  long cases = 0, groups_checked = 0, tight = 0;
  const bool ok = rc::check("page_entrokv accounting", [&] {
    const Index layers = *rc::gen::inRange<Index>(1, 4), kv = *rc::gen::inRange<Index>(1, 4);
    const Index G = *rc::gen::inRange<Index>(1, 5), T = *rc::gen::inRange<Index>(1, 151);
    kvaudit::PageParams params;
    params.group_size = G;
    params.page_size = *rc::gen::inRange<Index>(1, 41);
    const int a = *rc::gen::inRange(0, 20);
    params.ratio_text = a == 0 ? "0" : (a < 2 ? "0.05" : "0." + std::to_string(a * 5));
    params.n_sink = *rc::gen::inRange<Index>(0, 6);
    params.pooling = *rc::gen::element(kvaudit::PagePooling::Entropy, kvaudit::PagePooling::Mean);
    params.page_score = *rc::gen::element(kvaudit::PageScore::Sum, kvaudit::PageScore::Max);
    params.greedy = *rc::gen::element(kvaudit::GreedyRule::SkipMisfits, kvaudit::GreedyRule::StopAtFirstMisfit);
    params.sink_pages = *rc::gen::element(kvaudit::SinkPages::Reserved, kvaudit::SinkPages::Scored);
    kvaudit::ScoreTensor attn{layers, kv * G, T, {}};
    attn.values = *rc::gen::container<std::vector<float>>(static_cast<std::size_t>(layers * kv * G * T),
                                                         rc::gen::element(0.0f, 0.0f, 0.5f, 0.25f, 1.0f, 0.0625f, 2.0f));
    const pg::PagedSelection sel = pg::page_entrokv(attn, params);
    RC_ASSERT(sel.budget == pg::page_token_budget(T, params.ratio_text));
    RC_ASSERT(pg::check_page_accounting(sel.ledger, sel.kept_tokens, T, params.page_size, sel.budget).passed());
    const auto pages = pg::page_layout(T, params.page_size);
    Index total_pages = 0, total_tokens = 0, ledger_tokens = 0;
    for (Index l = 0; l < layers; ++l)
      for (Index g = 0; g < kv; ++g) {
        const auto& r = sel.groups[static_cast<std::size_t>(l * kv + g)];
        RC_ASSERT(check_kept(pages, r.kept_pages, T, params.page_size, sel.budget) == std::string());
        RC_ASSERT(r.kept_tokens == sel.kept_tokens[static_cast<std::size_t>(l * kv + g)]);
        total_pages += static_cast<Index>(r.kept_pages.size());
        total_tokens += static_cast<Index>(r.kept_tokens.size());
        for (std::size_t j = 0; j < pages.size(); ++j) ledger_tokens += sel.ledger.at(l, g, static_cast<Index>(j)) ? pages[j].size() : 0;
        tight += static_cast<Index>(r.kept_tokens.size()) == sel.budget;
        ++groups_checked;
      }
    RC_ASSERT(total_pages == sel.ledger.kept_total());  // (A3)
    RC_ASSERT(total_tokens == ledger_tokens);
    ++cases;
  });
  ASSERT_TRUE(ok);
  report().cover("end-to-end", std::to_string(cases) + " RapidCheck tensors, " + std::to_string(groups_checked) +
                                   " (layer, group) selections (" + std::to_string(tight) + " exactly at budget), P<=40, T<=150");
}

TEST(Proof05, Verdict) {
  report().conclude("05_page_accounting", "proved-and-checked", {"orders", "end-to-end"});
}

}  // namespace
