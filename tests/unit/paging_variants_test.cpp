// The published Page-EntroKV variants as knobs (docs/page-entrokv.md section 8): the head-weight temperature, the
// entropy source, the page-count budget and its two rules, the presets parsed once, and the checker naming the two
// differences `temperature` and `page-count-budget` instead of `tie-order`. Hand-computed cases.
#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "audit/conform/page_case.h"
#include "audit/page_check.h"
#include "core/error.h"
#include "core/paging/page_options.h"
#include "core/paging/page_selector.h"
#include "oracle/page_entrokv.h"

namespace op = kvaudit::oracle::paging;
using kvaudit::Index;
using kvaudit::PageParams;
using op::Exact;

namespace {

kvaudit::paging::PageOptions options(const std::string& preset) {
  kvaudit::paging::PageOptions o;
  o.group_size = 2;
  o.page_size = 1;
  o.sinks = 0;
  o.ratio = "0.8";
  o.preset = preset;
  return o;
}

kvaudit::Verdict judge(const kvaudit::ScoreTensor& attn, const PageParams& p, std::vector<Index> claimed) {
  kvaudit::audit::PageClaim claim{{std::move(claimed)}, std::nullopt};
  return kvaudit::audit::check_page_claim(attn, 0, p, claim, {kvaudit::paging::ScorePrecision::Exact, 0.0}).verdict;
}

// Two heads with disjoint peaks: head 0 has the larger collision probability (0.52 against 0.476125), head 1 the
// larger peak (0.67 against 0.6). With P = 1 and one token of budget the top page is head 1's peak at tau = 1
// (pooled 0.3132 against 0.3202) and head 0's at tau = 0.5 (0.3264 against 0.3055).
kvaudit::ScoreTensor temperature_rows() {
  const float r = 0.0825f;
  return {1, 2, 6, {0.6f, 0.0f, 0.0f, 0.4f, 0.0f, 0.0f, 0.0f, 0.67f, r, r, r, r}};
}

}  // namespace

TEST(PagingVariants, PageCountRules) {
  using kvaudit::PageCountRule;
  // Paper: floor((1 - rho) T / P), may be 0.
  EXPECT_EQ(op::page_count_budget(1, 2, "0.5", PageCountRule::Paper), 0);
  EXPECT_EQ(op::page_count_budget(1000, 16, "0.8", PageCountRule::Paper), 12);   // floor(200 / 16)
  EXPECT_EQ(op::page_count_budget(1010, 16, "0.5", PageCountRule::Paper), 31);   // floor(505 / 16)
  // Entro-Prefill: max(1, floor((1 - rho) ceil(T / P))).
  EXPECT_EQ(op::page_count_budget(1, 2, "0.5", PageCountRule::EntroPrefill), 1);
  EXPECT_EQ(op::page_count_budget(1010, 16, "0.5", PageCountRule::EntroPrefill), 32);  // floor(64 / 2)
  EXPECT_EQ(op::page_count_budget(100, 16, "0.8", PageCountRule::EntroPrefill), 1);    // floor(0.2 * 7) = 1
  // The optimized selector's rule is its own code: it must agree.
  for (Index T : {1, 7, 100, 1010})
    for (Index P : {1, 2, 16})
      for (const char* rho : {"0", "0.5", "0.8", "0.95"})
        for (PageCountRule rule : {PageCountRule::Paper, PageCountRule::EntroPrefill}) {
          PageParams p;
          p.page_size = P;
          p.ratio_text = rho;
          p.budget_unit = kvaudit::BudgetUnit::Pages;
          p.page_count_rule = rule;
          EXPECT_EQ(kvaudit::paging::walk_budget(T, p), op::page_count_budget(T, P, rho, rule)) << T << " " << P << " " << rho;
        }
}

TEST(PagingVariants, TemperatureRaisesTheCollisionProbability) {
  // c = 1/2 and 1/4: tau = 1 gives 2/3, 1/3; tau = 0.5 (c^2 = 1/4, 1/16) gives 4/5, 1/5.
  const std::vector<std::optional<op::ScaledRow>> rows = {std::vector<Exact>{Exact(1, 2), Exact(1, 2)},
                                                               std::vector<Exact>{Exact(1, 2), Exact(0), Exact(0)}};
  // collision: 1/2 for the first row, 1/4 for the second
  const std::vector<std::optional<op::ScaledRow>> quarter = {rows[0], std::vector<Exact>{Exact(1, 2)}};
  EXPECT_EQ(op::group_weights(quarter, kvaudit::PagePooling::Entropy, 1), (std::vector<Exact>{Exact(2, 3), Exact(1, 3)}));
  EXPECT_EQ(op::group_weights(quarter, kvaudit::PagePooling::Entropy, 2), (std::vector<Exact>{Exact(4, 5), Exact(1, 5)}));
  EXPECT_EQ(op::group_weights(quarter, kvaudit::PagePooling::Mean, 2), (std::vector<Exact>{Exact(1, 2), Exact(1, 2)}));
}

TEST(PagingVariants, PresetsParseOnceAndKnobsOverrideThem) {
  using namespace kvaudit;
  const PageParams d = paging::parse_page_options(options(""));
  EXPECT_EQ(d.inverse_temperature, 1);
  EXPECT_EQ(d.budget_unit, BudgetUnit::Tokens);
  EXPECT_EQ(d.page_score, PageScore::Sum);
  const PageParams r = paging::parse_page_options(options("released"));
  EXPECT_EQ(r.inverse_temperature, 2);
  EXPECT_EQ(r.entropy_on, EntropySource::SinkIsolated);
  EXPECT_EQ(r.source, PoolSource::Raw);
  EXPECT_EQ(r.page_score, PageScore::Max);
  EXPECT_EQ(r.sink_pages, SinkPages::Scored);
  EXPECT_EQ(r.budget_unit, BudgetUnit::Pages);
  EXPECT_EQ(r.page_count_rule, PageCountRule::Paper);
  const PageParams e = paging::parse_page_options(options("entro-prefill"));
  EXPECT_EQ(e.inverse_temperature, 1);
  EXPECT_EQ(e.entropy_on, EntropySource::Raw);
  EXPECT_EQ(e.page_count_rule, PageCountRule::EntroPrefill);
  auto o = options("paper");
  o.temperature = "1";
  o.budget_unit = "tokens";
  const PageParams q = paging::parse_page_options(o);
  EXPECT_EQ(q.inverse_temperature, 1);
  EXPECT_EQ(q.budget_unit, BudgetUnit::Tokens);
  EXPECT_EQ(q.page_score, PageScore::Max);  // the preset's, not overridden
  EXPECT_EQ(paging::parse_inverse_temperature("0.25", "t"), 4);
  EXPECT_EQ(paging::temperature_text(2), "0.5");
  EXPECT_EQ(paging::temperature_text(4), "0.25");
  // Bad input: one error naming the flag and the value.
  o.temperature = "0.3";
  try {
    paging::parse_page_options(o);
    ADD_FAILURE() << "tau = 0.3 (1/tau not an integer) was accepted";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("--temperature"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("0.3"), std::string::npos) << err.what();
  }
  auto bad = options("authors");
  EXPECT_THROW(paging::parse_page_options(bad), InputError);
  bad = options("");
  bad.budget_unit = "chunks";
  EXPECT_THROW(paging::parse_page_options(bad), InputError);
}

TEST(PagingVariants, CheckerNamesTheTemperature) {
  const kvaudit::ScoreTensor attn = temperature_rows();
  PageParams p = kvaudit::paging::parse_page_options(options(""));
  p.source = kvaudit::PoolSource::Raw;
  p.page_score = kvaudit::PageScore::Max;
  p.sink_pages = kvaudit::SinkPages::Scored;
  EXPECT_EQ(kvaudit::audit::canonical_page_selection(attn, 0, p), (std::vector<std::vector<Index>>{{1}}));
  EXPECT_TRUE(judge(attn, p, {1}).passed());
  const kvaudit::Verdict v = judge(attn, p, {0});
  EXPECT_EQ(v.rule, "temperature") << v.message;
  p.inverse_temperature = 2;
  EXPECT_EQ(kvaudit::audit::canonical_page_selection(attn, 0, p), (std::vector<std::vector<Index>>{{0}}));
  // Here tau = 1's page is also mean pooling's (the larger peak wins when the weights are closer): the first
  // mistake that fits names the rule, and the message lists every one, the temperature included.
  const kvaudit::Verdict w = judge(attn, p, {1});
  EXPECT_EQ(w.rule, "weights") << w.message;
  EXPECT_NE(w.message.find("head weights at tau = 1 "), std::string::npos) << w.message;
  // The optimized selector takes the knob too.
  EXPECT_EQ(kvaudit::paging::select_pages(attn, p).kept_pages(0, 0), (std::vector<Index>{0}));
  EXPECT_TRUE(kvaudit::audit::compare_selector_with_oracle(attn, p).verdict.passed());
}

TEST(PagingVariants, CheckerNamesThePageCountBudget) {
  // The issue's case: one head [1], T = 1, P = 2. The paper's K = floor(0.5 / 2) = 0 keeps nothing; the token
  // walk (B = 1) keeps page 0.
  const kvaudit::ScoreTensor one{1, 1, 1, {1.0f}};
  auto o = options("released");
  o.group_size = 1;
  o.page_size = 2;
  o.ratio = "0.5";
  const PageParams released = kvaudit::paging::parse_page_options(o);
  EXPECT_TRUE(judge(one, released, {}).passed());
  const kvaudit::Verdict over = judge(one, released, {0});
  EXPECT_EQ(over.rule, "page-count-budget") << over.message;
  PageParams tokens = released;
  tokens.budget_unit = kvaudit::BudgetUnit::Tokens;
  EXPECT_TRUE(judge(one, tokens, {0}).passed());
  const kvaudit::Verdict none = judge(one, tokens, {});
  // Keeping nothing where the page B = 1 token fits is an under-fill first (conform's under_fill mutant shrinks to
  // this very case); the page count K = 0 that keeps it is named in the message.
  EXPECT_EQ(none.rule, "under-fill") << none.message;
  EXPECT_NE(none.message.find("a page count K = 0 (paper rule) by top-k"), std::string::npos) << none.message;
  EXPECT_EQ(kvaudit::paging::select_pages(one, released).kept_total(), 0);
}

TEST(PagingVariants, ConformRequestsCarryEveryKnobAndAPreset) {
  kvaudit::conform::PageCase c;
  c.q_heads = 2;
  c.tokens = 6;
  c.values = temperature_rows().values;
  c.params = kvaudit::paging::parse_page_options(options("entro-prefill"));
  c.params.inverse_temperature = 4;
  const auto back = kvaudit::conform::decode_page_request(kvaudit::conform::encode_page_request(1, c), "t");
  EXPECT_EQ(back.params.inverse_temperature, 4);
  EXPECT_EQ(back.params.entropy_on, kvaudit::EntropySource::Raw);
  EXPECT_EQ(back.params.budget_unit, kvaudit::BudgetUnit::Pages);
  EXPECT_EQ(back.params.page_count_rule, kvaudit::PageCountRule::EntroPrefill);
  // A request may name a preset; a knob sent with it overrides the preset's.
  const auto named = kvaudit::conform::decode_page_request(
      R"({"attention": [[0.5, 0.5]], "group_size": 1, "preset": "released", "temperature": 1})", "t");
  EXPECT_EQ(named.params.budget_unit, kvaudit::BudgetUnit::Pages);
  EXPECT_EQ(named.params.inverse_temperature, 1);
  EXPECT_THROW(kvaudit::conform::decode_page_request(R"({"attention": [[1]], "group_size": 1, "preset": "authors"})", "t"),
               kvaudit::InputError);
}
