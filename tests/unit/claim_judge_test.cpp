// The claim judge (audit/claims.h) per kind at its boundaries, the rules no row may break (stand-ins never
// settle a claim, a sample never refutes an existence claim) checked against a planted mutant, the report form
// and its schema check, and the report totals counting an inconclusive claim as open.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "audit/claims.h"
#include "reports/report_schema.h"

using namespace kvaudit::audit;
using nlohmann::json;

namespace {

ClaimRow row(ClaimKind kind, Evidence evidence, Protocol protocol = Protocol::Own, kvaudit::Index n = 1) {
  ClaimRow r{.claim = "c", .source = "s", .measured = "m", .why = "w", .kind = kind, .protocol = protocol, .evidence = evidence, .observations = n};
  if (protocol == Protocol::StandIn) r.stand_in = "model X for model Y";
  return r;
}

ClaimRow with_interval(ClaimRow r, const Interval& ci, double claimed, Side side) {
  r.interval = ci;
  r.evidence = interval_evidence(ci, claimed, side);
  return r;
}

// Every rule docs/audit.md states that holds for any row, checked over every (kind, evidence, protocol, interval,
// proof, n) combination; returns the breaches, each as text. A judge that breaks none is not thereby right (the
// per-kind tests pin the table), but one that breaks any is wrong.
std::vector<std::string> breaches(const std::function<ClaimVerdict(const ClaimRow&)>& judge) {
  const ClaimKind kinds[] = {ClaimKind::Universal, ClaimKind::Existence, ClaimKind::Comparative, ClaimKind::Statistical,
                             ClaimKind::ByConstruction, ClaimKind::NotTestable};
  const Evidence evidence[] = {Evidence::NotMeasured, Evidence::Incomplete, Evidence::HoldsOnEveryCase, Evidence::HoldsOnSample,
                               Evidence::Counterexample, Evidence::Observed, Evidence::NotObserved, Evidence::ProvenBelow,
                               Evidence::IntervalOnClaimSide, Evidence::IntervalStraddles, Evidence::IntervalExcludes};
  std::vector<std::string> out;
  for (ClaimKind k : kinds)
    for (Evidence e : evidence)
      for (Protocol p : {Protocol::Own, Protocol::StandIn})
        for (bool interval : {false, true})
          for (bool proof : {false, true})
            for (kvaudit::Index n : {0, 1}) {
              ClaimRow r = row(k, e, p, n);
              if (interval) r.interval = Interval{0.1, 0.2, "Wilson score 95 %"};
              if (proof) r.proof = "proofs/01_merge_delta.md";
              const ClaimVerdict v = judge(r);
              const std::string at = std::string(to_string(k)) + "/" + to_string(e) + "/" + to_string(p) + (interval ? "/interval" : "") +
                                     (proof ? "/proof" : "") + "/n=" + std::to_string(n) + " -> " + to_string(v);
              const bool settles = v == ClaimVerdict::Confirmed || v == ClaimVerdict::Refuted;
              if (p == Protocol::StandIn && k != ClaimKind::ByConstruction && settles) out.push_back("stand-in settled: " + at);
              if (k == ClaimKind::Existence && v == ClaimVerdict::Refuted && (e != Evidence::ProvenBelow || !proof))
                out.push_back("existence refuted without a bound: " + at);
              if ((k == ClaimKind::Comparative || k == ClaimKind::Statistical) && !interval && v != ClaimVerdict::NotTestable &&
                  v != ClaimVerdict::Inconclusive)
                out.push_back("judged without an interval: " + at);
              if (v == ClaimVerdict::ByConstruction && (k != ClaimKind::ByConstruction || !proof)) out.push_back("by-construction without a proof: " + at);
              if (n == 0 && settles) out.push_back("settled on no observation: " + at);
              if (k == ClaimKind::NotTestable && v != ClaimVerdict::NotTestable) out.push_back("not-testable judged: " + at);
            }
  return out;
}

}  // namespace

TEST(ClaimJudge, UniversalNeedsEveryCaseToConfirmAndOneCounterexampleToRefute) {
  EXPECT_EQ(judge_claim(row(ClaimKind::Universal, Evidence::HoldsOnEveryCase)), ClaimVerdict::Confirmed) << "n = 1 is every case of a one-case domain";
  EXPECT_EQ(judge_claim(row(ClaimKind::Universal, Evidence::Counterexample)), ClaimVerdict::Refuted) << "one counterexample refutes";
  EXPECT_EQ(judge_claim(row(ClaimKind::Universal, Evidence::HoldsOnSample, Protocol::Own, 100000)), ClaimVerdict::Consistent)
      << "a sample of a for-all statement's domain does not confirm it";
  EXPECT_EQ(judge_claim(row(ClaimKind::Universal, Evidence::Incomplete)), ClaimVerdict::Inconclusive);
  EXPECT_EQ(judge_claim(row(ClaimKind::Universal, Evidence::HoldsOnEveryCase, Protocol::Own, 0)), ClaimVerdict::Inconclusive)
      << "no observation behind it";
  EXPECT_EQ(judge_claim(row(ClaimKind::Universal, Evidence::Observed)), ClaimVerdict::Inconclusive) << "another kind's evidence";
}

TEST(ClaimJudge, ExistenceIsConfirmedWhenReachedAndNeverRefutedByASample) {
  // Reached exactly at the claimed value counts as observed.
  EXPECT_EQ(existence_evidence(4.75, 4.75), Evidence::Observed);
  EXPECT_EQ(existence_evidence(std::nextafter(4.75, 0.0), 4.75), Evidence::NotObserved);
  ClaimRow at = row(ClaimKind::Existence, existence_evidence(4.75, 4.75), Protocol::Own, 1);
  EXPECT_EQ(judge_claim(at), ClaimVerdict::Confirmed);
  ClaimRow below = row(ClaimKind::Existence, existence_evidence(3.296, 4.75), Protocol::Own, 80);
  below.source_observations = 2240;
  EXPECT_EQ(judge_claim(below), ClaimVerdict::NotReproduced) << "80 samples against the source's 2,240 cannot refute 'up to'";
  ClaimRow bounded = row(ClaimKind::Existence, Evidence::ProvenBelow);
  EXPECT_EQ(judge_claim(bounded), ClaimVerdict::Inconclusive) << "a bound without its proof";
  bounded.proof = "proofs/06_union_overhead.md";
  EXPECT_EQ(judge_claim(bounded), ClaimVerdict::Refuted) << "only a proven bound below the claim refutes it";
}

TEST(ClaimJudge, IntervalTouchingTheClaimedValueStraddles) {
  const Interval touching_low{0.0, 0.3, "bootstrap"}, touching_high{-0.3, 0.0, "bootstrap"}, above{1e-12, 0.3, "bootstrap"},
      below{-0.3, -1e-12, "bootstrap"};
  for (ClaimKind k : {ClaimKind::Comparative, ClaimKind::Statistical}) {
    EXPECT_EQ(judge_claim(with_interval(row(k, {}), touching_low, 0.0, Side::Above)), ClaimVerdict::Consistent) << to_string(k);
    EXPECT_EQ(judge_claim(with_interval(row(k, {}), touching_high, 0.0, Side::Above)), ClaimVerdict::Consistent) << to_string(k);
    EXPECT_EQ(judge_claim(with_interval(row(k, {}), above, 0.0, Side::Above)), ClaimVerdict::Confirmed) << to_string(k);
    EXPECT_EQ(judge_claim(with_interval(row(k, {}), below, 0.0, Side::Above)), ClaimVerdict::Refuted) << to_string(k);
    EXPECT_EQ(judge_claim(with_interval(row(k, {}), below, 0.0, Side::Below)), ClaimVerdict::Confirmed) << to_string(k);
    EXPECT_EQ(judge_claim(with_interval(row(k, {}), touching_high, 0.0, Side::Below)), ClaimVerdict::Consistent) << to_string(k);
    // A point claim is at best consistent: touching counts as containing it.
    EXPECT_EQ(judge_claim(with_interval(row(k, {}), touching_low, 0.3, Side::At)), ClaimVerdict::Consistent) << to_string(k);
    EXPECT_EQ(judge_claim(with_interval(row(k, {}), touching_low, 0.30001, Side::At)), ClaimVerdict::Refuted) << to_string(k);
    // Without an interval (or its method) nothing is judged.
    EXPECT_EQ(judge_claim(row(k, Evidence::IntervalOnClaimSide)), ClaimVerdict::Inconclusive) << to_string(k);
    ClaimRow no_method = with_interval(row(k, {}), above, 0.0, Side::Above);
    no_method.interval->method.clear();
    EXPECT_EQ(judge_claim(no_method), ClaimVerdict::Inconclusive) << to_string(k);
  }
}

TEST(ClaimJudge, WilsonIntervalAtOneObservation) {
  // n = 1: 1 of 1 gives [z^2/(1+z^2) complement, 1], 0 of 1 gives [0, z^2/(1+z^2)].
  const double z2 = 1.959963984540054 * 1.959963984540054;
  const Interval one = wilson_interval(1, 1), zero = wilson_interval(0, 1);
  EXPECT_NEAR(one.lower, 1 / (1 + z2), 1e-12);
  EXPECT_EQ(one.upper, 1.0);
  EXPECT_EQ(zero.lower, 0.0);
  EXPECT_NEAR(zero.upper, z2 / (1 + z2), 1e-12);
  // A textbook value: 8 of 10 -> [0.4902, 0.9433].
  const Interval e = wilson_interval(8, 10);
  EXPECT_NEAR(e.lower, 0.4902, 1e-4);
  EXPECT_NEAR(e.upper, 0.9433, 1e-4);
  // "100 %" on one unit that had it: the interval reaches 1 and is wide, so consistent, never confirmed.
  EXPECT_EQ(judge_claim(with_interval(row(ClaimKind::Statistical, {}), one, 1.0, Side::At)), ClaimVerdict::Consistent);
  EXPECT_EQ(judge_claim(with_interval(row(ClaimKind::Statistical, {}), zero, 1.0, Side::At)), ClaimVerdict::Refuted);
}

TEST(ClaimJudge, StandInRowsAreNeverConfirmedOrRefuted) {
  EXPECT_EQ(judge_claim(row(ClaimKind::Universal, Evidence::HoldsOnEveryCase, Protocol::StandIn)), ClaimVerdict::Consistent);
  EXPECT_EQ(judge_claim(row(ClaimKind::Universal, Evidence::Counterexample, Protocol::StandIn)), ClaimVerdict::NotReproduced);
  EXPECT_EQ(judge_claim(row(ClaimKind::Existence, Evidence::Observed, Protocol::StandIn)), ClaimVerdict::Consistent);
  EXPECT_EQ(judge_claim(row(ClaimKind::Existence, Evidence::NotObserved, Protocol::StandIn, 80)), ClaimVerdict::NotReproduced);
  const ClaimRow needle = with_interval(row(ClaimKind::Statistical, {}, Protocol::StandIn, 224), wilson_interval(0, 224), 1.0, Side::At);
  EXPECT_EQ(needle.evidence, Evidence::IntervalExcludes);
  EXPECT_EQ(judge_claim(needle), ClaimVerdict::NotReproduced) << "an interval far from the claim, on a stand-in, still does not refute";
  const ClaimRow rises = with_interval(row(ClaimKind::Comparative, {}, Protocol::StandIn, 5), {0.03, 0.05, "bootstrap"}, 0.0, Side::Above);
  EXPECT_EQ(judge_claim(rises), ClaimVerdict::Consistent) << "an interval on the claim's side, on a stand-in, does not confirm";
  ClaimRow unsaid = row(ClaimKind::Universal, Evidence::HoldsOnEveryCase, Protocol::StandIn);
  unsaid.stand_in.clear();
  EXPECT_EQ(judge_claim(unsaid), ClaimVerdict::Inconclusive) << "a stand-in says what stands in for what";
}

TEST(ClaimJudge, ByConstructionNamesItsProofAndRunsACheckThatCanFail) {
  ClaimRow r = row(ClaimKind::ByConstruction, Evidence::HoldsOnEveryCase, Protocol::Own, 400);
  EXPECT_EQ(judge_claim(r), ClaimVerdict::Inconclusive) << "no proof named";
  r.proof = "proofs/05_page_accounting.md";
  EXPECT_EQ(judge_claim(r), ClaimVerdict::ByConstruction);
  r.evidence = Evidence::Counterexample;
  EXPECT_EQ(judge_claim(r), ClaimVerdict::Refuted) << "the executed check failed: the implementation breaks the construction";
  r.evidence = Evidence::HoldsOnEveryCase;
  r.observations = 0;
  EXPECT_EQ(judge_claim(r), ClaimVerdict::Inconclusive) << "no check ran";
  r.evidence = Evidence::NotMeasured;
  EXPECT_EQ(judge_claim(r), ClaimVerdict::NotTestable);
  EXPECT_EQ(judge_claim(row(ClaimKind::NotTestable, Evidence::HoldsOnEveryCase)), ClaimVerdict::NotTestable);
}

TEST(ClaimJudge, NoRowBreaksTheRulesAndAPlantedMutantDoes) {
  const std::vector<std::string> found = breaches(judge_claim);
  for (const auto& b : found) ADD_FAILURE() << b;
  // The mutant takes a stand-in's agreement for confirmation: the rule check must catch it.
  const auto mutant = [](const ClaimRow& r) {
    const ClaimVerdict v = judge_claim(r);
    return r.protocol == Protocol::StandIn && v == ClaimVerdict::Consistent ? ClaimVerdict::Confirmed : v;
  };
  const std::vector<std::string> caught = breaches(mutant);
  ASSERT_FALSE(caught.empty()) << "the mutant that confirms stand-in rows went unnoticed";
  EXPECT_NE(caught.front().find("stand-in settled"), std::string::npos) << caught.front();
  // A second mutant refutes an existence claim on a sample.
  const auto sample_refutes = [](const ClaimRow& r) {
    return r.kind == ClaimKind::Existence && r.evidence == Evidence::NotObserved && r.protocol == Protocol::Own ? ClaimVerdict::Refuted
                                                                                                                 : judge_claim(r);
  };
  EXPECT_FALSE(breaches(sample_refutes).empty());
}

TEST(ClaimReport, RowsRoundTripAndTheSchemaRejectsAVerdictTheEvidenceCannotCarry) {
  ClaimRow r = row(ClaimKind::Existence, Evidence::NotObserved, Protocol::StandIn, 80);
  r.source_observations = 2240;
  const json j = to_json(r);
  EXPECT_EQ(j["kind"], "existence");
  EXPECT_EQ(j["protocol"], "stand-in");
  EXPECT_EQ(j["stand_in"], "model X for model Y");
  EXPECT_EQ(j["observations"], 80);
  EXPECT_EQ(j["source_observations"], 2240);
  EXPECT_EQ(j["verdict"], "not-reproduced");
  EXPECT_FALSE(j.contains("interval"));
  EXPECT_EQ(judge_claim(claim_row_from_json(j)), ClaimVerdict::NotReproduced);
  const ClaimRow s = with_interval(row(ClaimKind::Statistical, {}, Protocol::StandIn, 10), wilson_interval(8, 10), 1.0, Side::At);
  const json js = to_json(s);
  EXPECT_EQ(js["interval"]["method"], "Wilson score 95 %");
  EXPECT_EQ(claim_row_from_json(js).interval->upper, s.interval->upper);

  json report = {{"schema", kvaudit::reports::kReportSchema}, {"volatile", json::object()}, {"inputs", json::object()}, {"verdict", "conforms"},
                 {"sections", json::array({{{"section", "x"}, {"title", "X"}, {"status", "ran"}, {"claims", json::array({j, js})}}})},
                 {"claims", json::array({j, js})}};
  EXPECT_NO_THROW(kvaudit::reports::validate_report(report));
  json bad = report;
  bad["claims"][0]["verdict"] = "confirmed";  // a stand-in marked confirmed by hand
  EXPECT_THROW(kvaudit::reports::validate_report(bad), std::invalid_argument);
  bad = report;
  bad["sections"][0]["claims"][1].erase("interval");
  EXPECT_THROW(kvaudit::reports::validate_report(bad), std::invalid_argument) << "a statistical row needs its interval";
  bad = report;
  bad["claims"][0].erase("kind");
  EXPECT_THROW(kvaudit::reports::validate_report(bad), std::invalid_argument) << "kind is required";
  bad = report;
  bad["claims"][0].erase("observations");
  EXPECT_THROW(kvaudit::reports::validate_report(bad), std::invalid_argument) << "observations are required";
}

TEST(ClaimReport, TotalsCountAnInconclusiveClaimAsOpen) {
  const json none = json::array();
  const ReportTotals open = report_totals(none, json::array({{{"verdict", "inconclusive"}}}));
  EXPECT_EQ(open.open_items, 1);
  EXPECT_EQ(open.refuted_claims, 0);
  EXPECT_EQ(open.verdict(), kvaudit::VerdictKind::Inconclusive);
  // The verdicts a stand-in or a proof can carry are neither open nor refutations.
  const ReportTotals settled = report_totals(
      none, json::array({{{"verdict", "consistent"}}, {{"verdict", "not-reproduced"}}, {{"verdict", "by-construction"}}, {{"verdict", "not-testable"}}}));
  EXPECT_EQ(settled.open_items, 0);
  EXPECT_EQ(settled.refuted_claims, 0);
  EXPECT_EQ(settled.verdict(), kvaudit::VerdictKind::Conforms);
  EXPECT_EQ(report_totals(none, json::array({{{"verdict", "refuted"}}})).verdict(), kvaudit::VerdictKind::Violates);
  EXPECT_THROW(report_totals(none, json::array({{{"verdict", "sort-of"}}})), std::invalid_argument);
}
