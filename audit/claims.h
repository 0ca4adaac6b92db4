// A claim row typed by what it claims (kind), whose procedure measured it (protocol) and what was seen
// (evidence, n, interval, proof), and the one judge that turns that into a verdict (docs/audit.md, "Claims").
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/verdict_text.h"
#include "core/types.h"

namespace kvaudit::audit {

// universal: a for-all statement about a formula, a budget or a released code path (one counterexample refutes);
// existence: "up to", "as high as", "can reach"; comparative: an ordering or difference between methods;
// statistical: a rate, a mean, a ratio of counts; by-construction: true by the method's definition (names a proof);
// not-testable: nothing here can speak to it.
enum class ClaimKind { Universal, Existence, Comparative, Statistical, ByConstruction, NotTestable };

// own: the claim's own procedure on the claim's own object (e.g. the released kvpress code); stand-in: another
// model, metric or protocol in its place (ClaimRow::stand_in says which for which).
enum class Protocol { Own, StandIn };

// What the measurement showed, before any judgement. A row's evidence is a fact about the data; judge_claim alone
// decides what that fact allows the report to say about the claim.
enum class Evidence {
  NotMeasured,         // the measurement cannot speak to the claim here (why says so)
  Incomplete,          // some cases were inconclusive or did not run, and none failed
  HoldsOnEveryCase,    // checked on every case of the claim's domain (or of the scope the claim names)
  HoldsOnSample,       // no counterexample in a sample that is not the claim's whole domain
  Counterexample,      // a case where the statement fails, shown in measured/why or the findings
  Observed,            // existence: the claimed value was reached
  NotObserved,         // existence: not reached in `observations` samples
  ProvenBelow,         // existence: a proof (ClaimRow::proof) bounds the quantity below the claimed value
  IntervalOnClaimSide, // the 95 % interval lies strictly on the claim's side of the claimed value
  IntervalStraddles,   // the interval contains or touches the claimed value
  IntervalExcludes,    // the interval lies strictly on the other side (or, for a point claim, away from it)
};

// Which side of `claimed` the claim puts the quantity: above it, below it, or at it (a point claim, which no
// interval can confirm: at best the interval contains it).
enum class Side { Above, Below, At };

struct Interval {
  double lower = 0, upper = 0;
  std::string method{};  // e.g. "Wilson 95 %", "bootstrap over prompts, 2000 resamples, percentile 95 %"
};

struct ClaimRow {
  // Every field has a default, so a call site names only what it knows (designated initializers, in this order).
  std::string claim{}, source{}, measured{}, why{};
  ClaimKind kind = ClaimKind::NotTestable;
  Protocol protocol = Protocol::Own;
  std::string stand_in{};                      // stand-in: what stands in for what (model, metric, recall protocol)
  Evidence evidence = Evidence::NotMeasured;
  Index observations = 0;                      // n behind the measured value
  std::optional<Index> source_observations{};  // the source's n, where it states one
  std::optional<Interval> interval{};          // comparative and statistical rows
  std::string proof{};                         // by-construction (and ProvenBelow): a file under proofs/
};

// The verdict `row`'s evidence can carry for its kind (docs/audit.md):
// - not-testable kind, or evidence NotMeasured: not-testable; Incomplete evidence: inconclusive.
// - a row missing what its kind needs (no interval on a comparative/statistical row, no proof on a by-construction
//   row or behind ProvenBelow, n = 0 behind a measurement, evidence another kind's, a stand-in that does not say what
//   stands in for what) is inconclusive, never judged.
// - stand-in protocol is never confirmed or refuted: evidence for the claim is consistent, against it not-reproduced.
// - universal: every case -> confirmed, counterexample -> refuted, no counterexample in a sample -> consistent.
// - existence: observed -> confirmed, not observed -> not-reproduced (never refuted by a sample), proven below ->
//   refuted.
// - comparative/statistical: interval on the claim's side -> confirmed, excludes -> refuted, straddles ->
//   consistent.
// - by-construction: the executed check held -> by-construction, it failed -> refuted.
ClaimVerdict judge_claim(const ClaimRow& row);

// Where `ci` lies relative to `claimed` for a claim of the given side. Touching counts as straddling.
Evidence interval_evidence(const Interval& ci, double claimed, Side side);

// Existence evidence: observed when the largest value reached is at least the claimed one (equal counts).
Evidence existence_evidence(double reached, double claimed);

// 95 % percentile bootstrap: `resamples` resamples of `units` unit indices, each drawn uniformly with replacement from a
// generator seeded with `seed` (reports stay reproducible), scored by `statistic` (nullopt where it is undefined: that
// resample is skipped). nullopt for fewer than 2 units (a unit resamples to itself) or when under half the resamples
// are defined. `method` becomes "percentile bootstrap over <method>, <defined> resamples, seed <seed>".
std::optional<Interval> percentile_bootstrap(std::size_t units, const std::function<std::optional<double>(const std::vector<std::size_t>&)>& statistic,
                                             int resamples, std::uint64_t seed, const std::string& method);

// Wilson score 95 % interval for `successes` of `n` (n >= 1).
Interval wilson_interval(Index successes, Index n);

// Paired binary outcomes of methods a and b on the same items: how many succeeded under both, a only, b only, neither.
struct PairedCounts {
  Index both = 0, only_a = 0, only_b = 0, neither = 0;
  Index n() const { return both + only_a + only_b + neither; }
};
// 95 % interval for rate(a) - rate(b) from paired outcomes: Newcombe's hybrid score interval for paired proportions
// (Stat. Med. 1998, 17:2635, method 10: Wilson intervals of both rates combined with the phi correlation). n >= 1.
Interval paired_difference_interval(const PairedCounts& c);
// Exact two-sided McNemar test: P(a binomial(only_a + only_b, 1/2) count at least as far from the middle as
// observed); 1 when no pair is discordant.
double exact_mcnemar_p(const PairedCounts& c);

const char* to_string(ClaimKind k);
const char* to_string(Protocol p);
const char* to_string(Evidence e);
// Inverses of the to_string above; std::invalid_argument on any other text.
ClaimKind parse_claim_kind(const std::string& text);
Protocol parse_protocol(const std::string& text);
Evidence parse_evidence(const std::string& text);

// The report document's claim object: claim, source, measured, why, kind, protocol, stand_in, evidence,
// observations, source_observations, interval {lower, upper, method}, proof, verdict (= judge_claim(row)).
// Enumerations as text; optional fields only when present.
nlohmann::json to_json(const ClaimRow& row);
// Inverse of to_json (verdict aside), so that a reader of report.json can judge the row again;
// std::invalid_argument (or nlohmann's exceptions) on a malformed row.
ClaimRow claim_row_from_json(const nlohmann::json& j);

}  // namespace kvaudit::audit
