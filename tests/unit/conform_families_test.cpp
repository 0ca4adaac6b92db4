// The Page-EntroKV and partition families of `kvaudit conform`, without an implementation process: the
// checkers against the exact oracles, every rule on a hand-made or searched case, the wire formats, --max-size,
// hostile replay lines, inconclusive never a pass. (Throughput: benchmarks/conform_judge_bench.cpp.)
#include <array>
#include <cmath>
#include <fstream>
#include <iostream>
#include <random>

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include "audit/conform/chunk_family.h"
#include "audit/conform/page_family.h"
#include "audit/conform/partition_family.h"
#include "audit/conform/protocol.h"
#include "core/error.h"
#include "oracle/page_entrokv.h"
#include "oracle/partition_arith.h"
#include "oracle/partition_exact.h"
#include "tests/unit/conform_run_support.h"

using namespace kvaudit;
using namespace kvaudit::conform;
namespace op = kvaudit::oracle::paging;

namespace {

std::vector<PageCase> sample_pages(int count, Index max_size, std::uint64_t seed) {
  rc::Random random(seed);
  auto gen = page_cases(max_size);
  std::vector<PageCase> out;
  for (int i = 0; i < count; ++i) out.push_back(gen(random.split(), i % 101).value());
  return out;
}

std::vector<PartitionCase> sample_partitions(int count, Index max_size, std::uint64_t seed) {
  rc::Random random(seed);
  auto gen = partition_cases(max_size);
  std::vector<PartitionCase> out;
  for (int i = 0; i < count; ++i) out.push_back(gen(random.split(), i % 101).value());
  return out;
}

PageAnswer answer_of(std::vector<std::vector<Index>> pages) { return {std::move(pages), std::nullopt}; }

// The first generated case where changing the parameters with `change` changes the canonical pages, and the
// rule the judge names for the changed parameters' answer.
template <class Change>
std::string rule_of_mistake(Change change) {
  for (const PageCase& c : sample_pages(600, 0, 7)) {
    PageCase wrong = c;
    change(wrong.params);
    const auto right = canonical_pages(c), mistaken = canonical_pages(wrong);
    if (right == mistaken) continue;
    Verdict v = judge_pages(c, answer_of(mistaken));
    if (!v.passed()) return v.rule;
  }
  return "(no case found)";
}

PartitionVerdict judge(const PartitionCase& c, PartitionReply r, PartitionClaim claim = PartitionClaim::Exact) {
  return judge_partition(c, r, claim);
}

PartitionReply cuts(std::vector<Index> b) { return {false, std::move(b)}; }

}  // namespace

// ---- Page-EntroKV checker ------------------------------------------------------------------------------

TEST(ConformPageJudge, TheOraclesCanonicalPagesConformAndTheJudgeAgreesWithTheOraclesAdmissibility) {
  std::mt19937 rng(5);
  int canonical = 0, variants = 0, admissible_variants = 0;
  for (const PageCase& c : sample_pages(300, 128, 2)) {
    const auto pages = canonical_pages(c);
    ASSERT_TRUE(judge_pages(c, answer_of(pages)).passed()) << c.origin << ": " << judge_pages(c, answer_of(pages)).message;
    ++canonical;
    // Variants of group 0: one page swapped for another. The verdict must match the oracle's admissibility on the
    // exact scores at the float32 bound (conform's default precision model).
    const Index n = (c.tokens + c.params.page_size - 1) / c.params.page_size;
    if (pages[0].empty() || n < 2) continue;
    auto v = pages;
    std::vector<Index>& g0 = v[0];
    const Index drop = g0[rng() % g0.size()], add = static_cast<Index>(rng() % static_cast<unsigned>(n));
    g0.erase(std::find(g0.begin(), g0.end(), drop));
    if (std::find(g0.begin(), g0.end(), add) == g0.end()) g0.push_back(add);
    std::sort(g0.begin(), g0.end());
    const bool fast = judge_pages(c, answer_of(v)).passed();
    std::vector<std::span<const float>> rows;
    for (Index h = 0; h < c.params.group_size; ++h) rows.push_back(c.row(h));
    const auto r = op::page_entrokv_group(rows, c.params);
    const auto layout = op::page_layout(c.tokens, c.params.page_size);
    const double tol = kvaudit::paging::page_score_rel_bound(kvaudit::paging::ScorePrecision::Float32, c.tokens, c.params.group_size, c.params.page_size);
    const bool exact = op::check_pages_admissible(r.page_scores, layout, r.reserved,
                                                      op::page_token_budget(c.tokens, c.params.ratio_text),
                                                      c.params.greedy, g0, op::Exact(tol))
                           .passed();
    EXPECT_EQ(fast, exact) << c.origin;
    ++variants;
    admissible_variants += exact;
  }
  EXPECT_GT(admissible_variants, 5) << "some variants must be admissible (ties), or the comparison is vacuous";
  EXPECT_GT(variants - admissible_variants, 50);
  std::cout << canonical << " canonical answers conform; " << variants << " variants, " << admissible_variants
            << " admissible\n";
}

TEST(ConformPageJudge, EachRuleIsNamed) {
  // T = 8, P = 2: pages {0,1} {2,3} {4,5} {6,7}; 2 sinks reserve page 0; budget floor(0.5 * 8) = 4 tokens.
  PageCase c;
  c.tokens = 8;
  c.params.page_size = 2;
  c.params.n_sink = 2;
  c.params.ratio_text = "0.5";
  // Head 0: sharp on position 6 (page 3); heads 1 and 2: flatter, more mass on page 1. Entropy weights
  // follow head 0 (page 3), mean pooling follows the majority (page 1).
  c.q_heads = 3;
  c.params.group_size = 3;
  c.values = {0.25f, 0.25f, 0.0375f, 0.0375f, 0.0375f, 0.0375f, 0.35f, 0.0f,
              0.25f, 0.25f, 0.15f, 0.15f, 0.05f, 0.05f, 0.05f, 0.05f,
              0.25f, 0.25f, 0.15f, 0.15f, 0.05f, 0.05f, 0.05f, 0.05f};
  const auto right = canonical_pages(c);
  ASSERT_EQ(right, (std::vector<std::vector<Index>>{{0, 3}}));
  EXPECT_TRUE(judge_pages(c, answer_of(right)).passed());
  auto rule = [&](PageAnswer a) { return judge_pages(c, a).rule; };
  EXPECT_EQ(rule(answer_of({{0, 3}, {0, 3}})), "shape");
  EXPECT_EQ(rule(answer_of({{0, 4}})), "range");
  EXPECT_EQ(rule(answer_of({{3, 0}})), "order");
  EXPECT_EQ(rule(answer_of({{0, 0}})), "order");
  EXPECT_EQ(rule(answer_of({{0, 2, 3}})), "budget");
  // Head 0 alone keeps pages {0, 3}, heads 1 and 2 alone {0, 1}: their union is over budget, and named.
  EXPECT_EQ(rule(answer_of({{0, 1, 3}})), "per-head-union");
  EXPECT_EQ(rule(answer_of({{1, 3}})), "reserved");
  // What mean pooling keeps, and also entropy weights on the raw rows (tried first, the narrower mistake).
  EXPECT_EQ(rule(answer_of({{0, 1}})), "weights-entropy");
  EXPECT_NE(judge_pages(c, answer_of({{0, 1}})).message.find("or mean pooling (w = 1/G)"), std::string::npos);
  EXPECT_EQ(rule(answer_of({{0, 2}})), "score-order");  // no page ties: page 3 must be kept
  EXPECT_NE(judge_pages(c, answer_of({{0, 2}})).message.find("page 3 (exact score"), std::string::npos);
  EXPECT_TRUE(judge_pages(c, {{{0, 3}}, {{{0, 1, 6, 7}}}}).passed());
  EXPECT_EQ(rule({{{0, 3}}, {{{0, 1, 6}}}}), "tokens-agree");
  EXPECT_EQ(rule({{{0, 3}}, {{{0, 1, 5, 6}}}}), "pages-agree");
  // Mistakes found on generated cases, each named after what it is.
  EXPECT_EQ(rule_of_mistake([](kvaudit::PageParams& p) { p.pooling = kvaudit::PagePooling::Mean; }), "weights");
  EXPECT_EQ(rule_of_mistake([](kvaudit::PageParams& p) { p.page_score = kvaudit::PageScore::Max; }), "page-score");
  EXPECT_EQ(rule_of_mistake([](kvaudit::PageParams& p) { p.source = kvaudit::PoolSource::Raw; }), "sink-isolation");
  EXPECT_EQ(rule_of_mistake([](kvaudit::PageParams& p) { p.sink_pages = kvaudit::SinkPages::Scored; }), "reserved");
}

// Issue 26's case: [[1, 0, 0, 0]], P = 1, rho 0.5 (budget 2), kept [0]: a page that still fits was left out. No
// page ties there, so it must never read tie-order.
TEST(ConformPageJudge, AnUnderFilledWalkIsNamedUnderFill) {
  const PageCase c = decode_page_request(R"({"attention": [[1, 0, 0, 0]], "group_size": 1, "page_size": 1, "compression_ratio": 0.5})", "t");
  const Verdict v = judge_pages(c, answer_of({{0}}));
  EXPECT_EQ(v.rule, "under-fill") << v.message;
  EXPECT_NE(v.message.find("still fits: 1 retained of budget 2"), std::string::npos) << v.message;
}

// tie-order is reported only where pages really tie at the decision, and prints their scores; the same wrong answer
// on untied scores is a score-order violation.
TEST(ConformPageJudge, TieOrderOnlyWhereTheCaseTiesAndItPrintsTheTiedScores) {
  // T = 9, P = 2: pages {0,1} {2,3} {4,5} {6,7} {8}; no sinks; budget floor(0.5 * 9) = 4 tokens; skip misfits.
  // Page sums (in 16ths) 6, 3, 3, 1, 3: page 0 first, then one tie class of two full pages (1, 2) and the short page
  // 4 with 2 tokens of room. The short page first keeps it alone (a full page then misfits); a full page first keeps
  // that page alone. Keeping none of them and page 3 instead is what no order keeps, and the tie decides there.
  const std::string knobs = R"(, "group_size": 1, "page_size": 2, "sinks": 0, "compression_ratio": "0.5"})";
  const PageCase c = decode_page_request(
      R"({"attention": [[0.1875, 0.1875, 0.125, 0.0625, 0.0625, 0.125, 0.03125, 0.03125, 0.1875]])" + knobs, "t");
  for (Index k : {1, 2, 4}) EXPECT_TRUE(judge_pages(c, answer_of({{0, k}})).passed()) << k;
  const Verdict tied = judge_pages(c, answer_of({{0, 3}}));
  EXPECT_EQ(tied.rule, "tie-order") << tied.message;
  EXPECT_NE(tied.message.find("pages [1, 2, 4] tie (exact scores page 1 0.1875, page 2 0.1875, page 4 0.1875"), std::string::npos)
      << tied.message;
  // Untied (page sums 6, 4, 2, 1, 3: page 1 strictly second): the same answer is a score-order violation.
  const PageCase u = decode_page_request(
      R"({"attention": [[0.1875, 0.1875, 0.125, 0.125, 0.0625, 0.0625, 0.03125, 0.03125, 0.1875]])" + knobs, "t");
  EXPECT_TRUE(judge_pages(u, answer_of({{0, 1}})).passed());
  const Verdict untied = judge_pages(u, answer_of({{0, 3}}));
  EXPECT_EQ(untied.rule, "score-order") << untied.message;
  EXPECT_NE(untied.message.find("page 1 (exact score 0.25, tied with no other page) must be kept"), std::string::npos)
      << untied.message;
}

// Page-family replays read attention values as every method does: any finite number, rounded to the nearest
// float32 (noted in the origin), or refused under --replay-strict.
TEST(ConformFamiliesProtocol, PageReplayRoundsAttentionToFloat32UnlessStrict) {
  const std::string line = R"({"attention": [[0.1, 0.9, 0.5, 0.5]], "group_size": 1, "page_size": 2, "compression_ratio": 0.5})";
  const PageCase c = decode_page_request(line, "--replay line 1");
  EXPECT_EQ(c.values[0], 0.1f);
  EXPECT_EQ(c.values[1], 0.9f);
  EXPECT_EQ(c.values[2], 0.5f);
  EXPECT_NE(c.origin.find("2 attention values rounded to the nearest float32, e.g. 0.1 -> 0.10000000149011612"), std::string::npos)
      << c.origin;
  EXPECT_EQ(decode_page_request(R"({"attention": [[0.5, 0.5]], "group_size": 1})", "src").origin, "src");
  std::string strict;
  try {
    decode_page_request(line, "--replay line 1", Float32Input::Strict);
  } catch (const InputError& e) {
    strict = e.what();
  }
  EXPECT_NE(strict.find("--replay line 1: attention: value 0.1 is not a float32 value (--replay-strict)"), std::string::npos) << strict;
  std::string overflow;
  try {
    decode_page_request(R"({"attention": [[3.4028235677973366e38]], "group_size": 1})", "r");
  } catch (const InputError& e) {
    overflow = e.what();
  }
  EXPECT_NE(overflow.find("attention: value 3.4028235677973366e+38 is outside the float32 range"), std::string::npos) << overflow;
  std::string tiny_negative;
  try {
    decode_page_request(R"({"attention": [[1, -1e-50]], "group_size": 1})", "r");
  } catch (const InputError& e) {
    tiny_negative = e.what();
  }
  EXPECT_NE(tiny_negative.find("attention: value -1e-50 is negative"), std::string::npos) << tiny_negative;
}

TEST(ConformPageJudge, CasesTheOracleRejectsAreInvalidNotJudged) {
  PageCase c;
  c.q_heads = 3;
  c.tokens = 4;
  c.values.assign(12, 0.25f);
  c.params.group_size = 2;  // does not divide 3 heads
  EXPECT_THROW(judge_pages(c, answer_of({{0}})), std::invalid_argument);
  c.params.group_size = 3;
  c.params.ratio_text = "1.5";
  EXPECT_THROW(judge_pages(c, answer_of({{0}})), std::invalid_argument);
  c.params.ratio_text = "0.5";
  c.values[5] = -0.25f;
  EXPECT_THROW(judge_pages(c, answer_of({{0}})), std::invalid_argument);
}

// ---- Partition checker ---------------------------------------------------------------------------------

TEST(ConformPartitionJudge, EachRuleIsNamedAndExactTiesAtTheBudgetAreFeasible) {
  // Masses 1/2, 1/4, 1/4: the singletons have H = 1.5 bits exactly.
  PartitionCase c{{0.5, 0.25, 0.25}, 1.5, 3, ""};
  EXPECT_TRUE(judge(c, cuts({1, 2})).verdict.passed()) << "H = R exactly is within the budget";
  EXPECT_EQ(judge(c, cuts({1})).verdict.rule, "groups");
  EXPECT_EQ(judge(c, cuts({0, 2})).verdict.rule, "range");
  EXPECT_EQ(judge(c, cuts({1, 3})).verdict.rule, "range");
  EXPECT_EQ(judge(c, cuts({2, 1})).verdict.rule, "order");
  EXPECT_EQ(judge(c, {true, {}}).verdict.rule, "false-infeasible");
  c.budget_bits = std::nextafter(1.5, 0.0);
  EXPECT_EQ(judge(c, cuts({1, 2})).verdict.rule, "over-budget");
  EXPECT_TRUE(judge(c, {true, {}}).verdict.passed()) << "m = 3 groups of 3 masses: only the singletons exist";
  // Free form: the best within R = 1.2 is {1/2}, {1/2} = 1 bit; {1/2, 1/4}, {1/4} is 0.811 bits.
  PartitionCase f{{0.5, 0.25, 0.25}, 1.2, std::nullopt, ""};
  EXPECT_TRUE(judge(f, cuts({1})).verdict.passed());
  EXPECT_EQ(judge(f, cuts({2})).verdict.rule, "not-optimal");
  EXPECT_EQ(judge(f, cuts({1, 2})).verdict.rule, "over-budget");
  const PartitionVerdict h = judge(f, cuts({2}), PartitionClaim::Heuristic);
  EXPECT_TRUE(h.verdict.passed());
  ASSERT_TRUE(h.gap);
  EXPECT_TRUE(h.gap->certified);
  EXPECT_NEAR(h.gap->lower, 1.0 - (-(0.75 * std::log2(0.75)) - 0.25 * std::log2(0.25)), 1e-12);
  EXPECT_EQ(judge(f, {true, {}}, PartitionClaim::Heuristic).verdict.rule, "false-infeasible");
  PartitionCase none{{0.5, 0.5}, -1.0, std::nullopt, ""};
  EXPECT_TRUE(judge(none, {true, {}}).verdict.passed()) << "R < 0: certified infeasible";
  EXPECT_EQ(judge(none, cuts({})).verdict.rule, "over-budget");
}

TEST(ConformPartitionJudge, AnAnswerInsideAnUncertifiedBracketIsInconclusiveNeverAPass) {
  std::vector<double> p;
  std::mt19937 rng(3);
  for (int i = 0; i < 40; ++i) p.push_back(1.0 + static_cast<double>(rng() % 1000));
  double total = 0;
  for (double v : p) total += v;
  for (double& v : p) v /= total;
  const auto e = oracle::entropy_extremes(p, 8);
  PartitionCase c{p, (e.min_bits + e.max_bits) / 2, 8, ""};
  const auto best = oracle::solve_exact({c.p, c.budget_bits, c.groups});
  ASSERT_TRUE(best.certified);
  EXPECT_TRUE(judge_partition(c, cuts(best.cuts), PartitionClaim::Exact).verdict.passed());
  const PartitionVerdict v = judge_partition(c, cuts(best.cuts), PartitionClaim::Exact, 200);
  EXPECT_EQ(v.verdict.kind, VerdictKind::Inconclusive) << v.verdict.message;
  EXPECT_FALSE(v.verdict.passed());
}

TEST(ConformPartitionJudge, TheCertifiedAnswerConformsOnGeneratedCases) {
  int feasible = 0, infeasible = 0, exact_ties = 0;
  for (const PartitionCase& c : sample_partitions(200, 12, 4)) {
    const auto canonical = canonical_partition(c);
    PartitionReply r;
    r.infeasible = canonical.contains("infeasible");
    if (!r.infeasible) r.boundaries = canonical["boundaries"].get<std::vector<Index>>();
    const PartitionVerdict v = judge(c, r);
    ASSERT_TRUE(v.verdict.passed()) << encode_partition_request(0, c) << ": " << v.verdict.message;
    (r.infeasible ? infeasible : feasible)++;
    if (!r.infeasible) {
      const oracle::ExactPrefix prefix(c.p);
      exact_ties += prefix.compare_with(oracle::full_bounds(r.boundaries, static_cast<Index>(c.p.size())), c.budget_bits) ==
                    oracle::ExactPrefix::Decision::Equal;
    }
  }
  EXPECT_GT(infeasible, 10);
  EXPECT_GT(exact_ties, 3) << "the generator must produce optima exactly at R";
  std::cout << feasible << " feasible, " << infeasible << " infeasible, " << exact_ties << " optima exactly at R\n";
}

// ---- Wire formats, --max-size --------------------------------------------------------------------------

TEST(ConformFamiliesProtocol, PageRequestsRoundTripAndDefaultsApply) {
  for (const PageCase& c : sample_pages(50, 40, 9)) {
    const PageCase back = decode_page_request(encode_page_request(3, c), "test");
    ASSERT_EQ(back.values, c.values);
    EXPECT_EQ(back.q_heads, c.q_heads);
    EXPECT_EQ(back.params.ratio_text, c.params.ratio_text);
    EXPECT_EQ(back.params.page_size, c.params.page_size);
    EXPECT_EQ(back.params.n_sink, c.params.n_sink);
    EXPECT_EQ(back.params.pooling, c.params.pooling);
    EXPECT_EQ(back.params.greedy, c.params.greedy);
  }
  const PageCase d = decode_page_request(R"({"attention": [[0.5, 0.5], [1, 0]], "group_size": 2, "compression_ratio": 0.75})", "t");
  EXPECT_EQ(d.params.ratio_text, "0.75") << "a number keeps its decimal text";
  EXPECT_EQ(d.params.page_size, 16);
  EXPECT_EQ(d.params.n_sink, 4);
  auto bad = [](const std::string& line) {
    try {
      decode_page_request(line, "t");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(bad(R"({"attention": [[0.5, -0.5]], "group_size": 1})").find("negative"), std::string::npos);
  EXPECT_NE(bad(R"({"attention": [[1], [1], [1]], "group_size": 2})").find("group_size"), std::string::npos);
  EXPECT_NE(bad(R"({"attention": [[1]], "group_size": 1, "compression_ratio": "1.5"})"), "accepted");
  EXPECT_NE(bad(R"({"attention": [[1]], "page_size": 0})").find("page_size"), std::string::npos);
  EXPECT_NE(bad(R"({"attention": [[1e39]], "group_size": 1})").find("float32"), std::string::npos);
  EXPECT_NE(bad(R"({"attention": [[1]], "pooling": "median"})").find("pooling"), std::string::npos);
  EXPECT_NE(bad(R"({"attention": [[1]], "group_size": 1e30})").find("group_size"), std::string::npos);
}

TEST(ConformFamiliesProtocol, ResponsesAndTheirErrors) {
  auto page_kind = [](const std::string& line) {
    try {
      decode_page_response(line, 3);
    } catch (const ProtocolError& e) {
      return std::string(to_string(e.kind()));
    }
    return std::string("accepted");
  };
  EXPECT_EQ(page_kind(R"({"id": 3, "kept_pages": [[0, 2], []]})"), "accepted");
  EXPECT_EQ(page_kind(R"({"id": 3, "kept_pages": [0, 2]})"), "bad-response");
  EXPECT_EQ(page_kind(R"({"id": 3, "kept_pages": [[0.5]]})"), "bad-response");
  EXPECT_EQ(page_kind(R"({"id": 3, "error": "no"})"), "bad-response");
  EXPECT_EQ(page_kind(R"({"id": 4, "kept_pages": []})"), "wrong-id");
  EXPECT_EQ(page_kind("[[0]"), "bad-json");
  auto part_kind = [](const std::string& line) {
    try {
      decode_partition_response(line, 3);
    } catch (const ProtocolError& e) {
      return std::string(to_string(e.kind()));
    }
    return std::string("accepted");
  };
  EXPECT_EQ(part_kind(R"({"id": 3, "boundaries": [2, 1, 1]})"), "accepted") << "order is the judge's rule";
  EXPECT_EQ(part_kind(R"({"id": 3, "infeasible": true})"), "accepted");
  EXPECT_EQ(part_kind(R"({"id": 3, "infeasible": true, "boundaries": [1]})"), "bad-response");
  EXPECT_EQ(part_kind(R"({"id": 3, "boundaries": [1.5]})"), "bad-response");
  EXPECT_EQ(part_kind(R"({"id": 3})"), "bad-response");
  for (const PartitionCase& c : sample_partitions(50, 20, 5)) {
    const PartitionCase back = decode_partition_request(encode_partition_request(1, c), "t");
    EXPECT_EQ(back.p, c.p);
    EXPECT_EQ(back.budget_bits, c.budget_bits);
    EXPECT_EQ(back.groups, c.groups);
  }
}

TEST(ConformFamiliesProtocol, MaxSizeBoundsGeneratedCasesAndEveryShrink) {
  rc::Random random(11);
  auto pages = page_cases(8);
  auto parts = partition_cases(6);
  int checked = 0;
  for (int i = 0; i < 200; ++i) {
    const auto s = pages(random.split(), i % 101);
    ASSERT_LE(s.value().tokens, 8);
    auto shrinks = s.shrinks();
    for (int k = 0; k < 20; ++k) {
      auto next = shrinks.next();
      if (!next) break;
      ASSERT_LE(next->value().tokens, 8);
      ++checked;
    }
    auto concrete = shrinkable_page_case(s.value()).shrinks();
    while (auto next = concrete.next()) {
      ASSERT_LE(next->value().tokens, 8);
      ++checked;
    }
    const auto t = parts(random.split(), i % 101);
    ASSERT_LE(t.value().p.size(), 6u);
    auto cs = shrinkable_partition_case(t.value()).shrinks();
    while (auto next = cs.next()) {
      ASSERT_LE(next->value().p.size(), 6u);
      ++checked;
    }
  }
  // The chunk methods' generators are cut to a prefix, shrinks included.
  auto chunks = ChunkFamily(Method::EgChunkKV, Flavour::Kvpress, 5).generator();
  for (int i = 0; i < 200; ++i) {
    const auto s = chunks(random.split(), i % 101);
    ASSERT_LE(s.value().tokens, 5);
    auto shrinks = s.shrinks();
    for (int k = 0; k < 10; ++k) {
      auto next = shrinks.next();
      if (!next) break;
      ASSERT_LE(next->value().tokens, 5);
      ++checked;
    }
  }
  EXPECT_GT(checked, 2000);
}

// ---- The CLI without Python: hostile replay lines, inconclusive is exit 1 --------------------------------

TEST(ConformFamiliesCli, HostileReplayLinesAreExit2NamingTheField) {
  const std::string path = "/tmp/kvaudit_conform_families_" + std::to_string(::getpid()) + ".jsonl";
  struct Row {
    const char* method;
    const char* line;
    const char* field;
  };
  const Row rows[] = {
      {"page-entrokv", R"({"attention": [[0.5, -0.5]], "group_size": 1})", "attention"},
      {"page-entrokv", R"({"attention": [[1, 0], [1, 0], [1, 0]], "group_size": 2})", "group_size"},
      {"page-entrokv", R"({"attention": [[1]], "compression_ratio": "0.5.5"})", "compression_ratio"},
      {"page-entrokv", R"({"attention": []})", "attention"},
      {"page-entrokv", R"({"attention": [[1, 2], [1]]})", "attention"},
      {"page-entrokv", R"({"attention": [[NaN]]})", "request"},
      {"partition", R"({"probs": [0.5, "x"], "entropy_budget": 1})", "probs"},
      {"partition", R"({"probs": [0.5, 0.5], "entropy_budget": 1, "groups": 3})", "groups"},
      {"partition", R"({"probs": [0.5, 0.5], "entropy_budget": "1"})", "entropy_budget"},
      {"partition", R"({"probs": [-0.5, 1.5], "entropy_budget": 1})", "probs"},
      {"partition", R"({"method": "page-entrokv", "probs": [1], "entropy_budget": 1})", "method"},
  };
  for (const Row& r : rows) {
    std::ofstream(path) << r.line << "\n";
    auto run = conform_test::run_cli(std::string("--method ") + r.method + " --replay " + path + " --impl cat");
    EXPECT_EQ(run.exit_code, 2) << r.line << "\n" << run.err;
    EXPECT_TRUE(run.out.empty()) << r.line;
    EXPECT_NE(run.err.find(std::string(": ") + r.field + ":"), std::string::npos) << r.line << "\n" << run.err;
  }
  std::remove(path.c_str());
}

// One protocol: every family's rejection shows the offending value, as written.
TEST(ConformFamiliesCli, HostileReplayLinesShowTheOffendingValue) {
  const std::string path = "/tmp/kvaudit_conform_families_value_" + std::to_string(::getpid()) + ".jsonl";
  const std::string chunk = R"({"method": "chunkkv", "scores": [[1, 2]], "compression_ratio": 0.5, "chunk_length": 2, )"
                            R"("rescue_size": 1, "entropy_threshold": null})";
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string s = chunk;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  const std::vector<std::array<std::string, 3>> rows = {
      {"chunkkv", edit("0.5,", R"("0.7.5",)"), R"(compression_ratio: must be a decimal number in [0, 1) (as text or a JSON number), got "0.7.5")"},
      {"chunkkv", edit("0.5,", "1.5,"), "compression_ratio: must be a decimal number in [0, 1) (as text or a JSON number), got 1.5"},
      {"eg-chunkkv", edit("\"chunk_length\": 2", "\"chunk_length\": 2.5"), "chunk_length: must be an integer, got 2.5"},
      {"eg-chunkkv", edit("null}", "\"median\"}"), "entropy_threshold: must be a number or null, got \"median\""},
      {"partition", R"({"probs": [0.5, "x"], "entropy_budget": 1})", "probs: holds a non-number: \"x\""},
      {"partition", R"({"probs": {"a": 1}, "entropy_budget": 1})", "probs: must be a non-empty array of numbers, got {\"a\":1}"},
      {"partition", R"({"probs": [0.5, 0.5], "entropy_budget": "1"})", "entropy_budget: must be a number, got \"1\""},
      {"partition", R"({"probs": [0.5, 0.5], "entropy_budget": 1, "groups": 3})", "groups: must be null or an integer in [1, n], got 3"},
      {"page-entrokv", R"({"attention": [[0.5, -0.5]], "group_size": 1})", "value -0.5"},
      {"page-entrokv", R"({"attention": [[1]], "compression_ratio": "0.5.5"})", "'0.5.5'"},
  };
  for (const auto& [method, line, message] : rows) {
    std::ofstream(path) << line << "\n";
    auto run = conform_test::run_cli("--method " + method + " --replay " + path + " --impl cat");
    EXPECT_EQ(run.exit_code, 2) << line << "\n" << run.err;
    EXPECT_NE(run.err.find("--replay line 1: " + message.substr(0, message.find(':') + 1)), std::string::npos)
        << line << "\n" << run.err;
    EXPECT_NE(run.err.find(message), std::string::npos) << line << "\n" << run.err;
  }
  std::remove(path.c_str());
}

// A page replay line with values float32 cannot hold runs (rounded, the origin says so) and conforms with the plain
// implementation; --replay-strict refuses it with exit 2, the field and the value named, nothing on stdout.
TEST(ConformFamiliesCli, PageReplayRoundsToFloat32AndStrictRefuses) {
  const std::string path = "/tmp/kvaudit_conform_families_round_" + std::to_string(::getpid()) + ".jsonl";
  std::ofstream(path) << R"({"attention": [[0.1, 0.2, 0.3, 0.4]], "group_size": 1, "page_size": 1, "sinks": 0, "compression_ratio": "0.5"})"
                      << "\n";
  const std::string impl = conform_test::quote("python3 tests/mutants/page_impl.py");
  auto run = conform_test::run_cli("--method page-entrokv --replay " + path + " --impl " + impl);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  ASSERT_TRUE(run.report.is_object()) << run.out;
  EXPECT_EQ(run.report["verdict"], "conforms");
  EXPECT_EQ(run.report["cases"]["replayed"], 1);
  auto strict = conform_test::run_cli("--method page-entrokv --replay " + path + " --replay-strict --impl " + impl);
  EXPECT_EQ(strict.exit_code, 2) << strict.err;
  EXPECT_TRUE(strict.out.empty()) << strict.out;
  EXPECT_NE(strict.err.find("--replay line 1: attention: value 0.1 is not a float32 value (--replay-strict)"), std::string::npos)
      << strict.err;
  std::remove(path.c_str());
}

TEST(ConformFamiliesCli, ACaseTheOracleCannotJudgeMakesTheRunInconclusiveWithExit1) {
  const std::string path = "/tmp/kvaudit_conform_families_inc_" + std::to_string(::getpid()) + ".jsonl";
  std::ofstream(path) << R"({"probs": [0, 0], "entropy_budget": 1, "groups": 1})" << "\n";
  auto run = conform_test::run_cli("--method partition --replay " + path + " --impl " +
                                   conform_test::quote(R"(while read l; do echo '{"id": 0, "infeasible": true}'; done)"));
  EXPECT_EQ(run.exit_code, 1) << run.err;
  ASSERT_TRUE(run.report.is_object()) << run.out;
  EXPECT_EQ(run.report["verdict"], "inconclusive");
  EXPECT_EQ(run.report["cases"]["invalid"], 1);
  std::remove(path.c_str());
}

TEST(ConformFamiliesCli, WrongShapedPageAnswersAreViolationsAndGarbageIsAProtocolError) {
  auto violation = conform_test::run_cli(
      "--method page-entrokv --cases 5 --impl " +
      conform_test::quote(R"(i=0; while read l; do echo "{\"id\": $i, \"kept_pages\": [[], [], [], [], [], [], [], [], [], []]}"; i=$((i+1)); done)"));
  EXPECT_EQ(violation.exit_code, 1) << violation.err;
  ASSERT_TRUE(violation.report.is_object()) << violation.out;
  EXPECT_EQ(violation.report["counterexample"]["rule"], "shape");
  auto garbage = conform_test::run_cli("--method partition --cases 5 --impl " +
                                       conform_test::quote(R"(while read l; do echo '{"id": 0, "cuts": [1]}'; done)"));
  EXPECT_EQ(garbage.exit_code, 2) << garbage.err;
  EXPECT_EQ(garbage.report["protocol_error"]["kind"], "bad-response");
}

