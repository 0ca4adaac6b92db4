// The claim judge and the claim row's report form (see claims.h).
#include "audit/claims.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace kvaudit::audit {
namespace {

bool is_interval_evidence(Evidence e) {
  return e == Evidence::IntervalOnClaimSide || e == Evidence::IntervalStraddles || e == Evidence::IntervalExcludes;
}

// What the evidence says about the claim, kind aside: +1 for it, -1 against, 0 neither.
int direction(Evidence e) {
  switch (e) {
    case Evidence::HoldsOnEveryCase:
    case Evidence::HoldsOnSample:
    case Evidence::Observed:
    case Evidence::IntervalOnClaimSide:
    case Evidence::IntervalStraddles: return +1;
    case Evidence::Counterexample:
    case Evidence::NotObserved:
    case Evidence::ProvenBelow:
    case Evidence::IntervalExcludes: return -1;
    default: return 0;
  }
}

// Whether `e` is evidence a row of kind `k` can carry; anything else is a row built wrong.
bool fits(ClaimKind k, Evidence e) {
  switch (k) {
    case ClaimKind::Universal:
      return e == Evidence::HoldsOnEveryCase || e == Evidence::HoldsOnSample || e == Evidence::Counterexample;
    case ClaimKind::Existence: return e == Evidence::Observed || e == Evidence::NotObserved || e == Evidence::ProvenBelow;
    case ClaimKind::Comparative:
    case ClaimKind::Statistical: return is_interval_evidence(e);
    case ClaimKind::ByConstruction: return e == Evidence::HoldsOnEveryCase || e == Evidence::HoldsOnSample || e == Evidence::Counterexample;
    case ClaimKind::NotTestable: return false;
  }
  return false;
}

}  // namespace

ClaimVerdict judge_claim(const ClaimRow& r) {
  if (r.kind == ClaimKind::NotTestable || r.evidence == Evidence::NotMeasured) return ClaimVerdict::NotTestable;
  if (r.evidence == Evidence::Incomplete) return ClaimVerdict::Inconclusive;
  // A row missing what its kind needs is not judged: an unnamed proof or a missing interval would let a verdict
  // rest on nothing a reader can check.
  if (!fits(r.kind, r.evidence) || r.observations < 1) return ClaimVerdict::Inconclusive;
  if (r.protocol == Protocol::StandIn && r.stand_in.empty()) return ClaimVerdict::Inconclusive;
  const bool needs_interval = r.kind == ClaimKind::Comparative || r.kind == ClaimKind::Statistical;
  if (needs_interval && (!r.interval || r.interval->method.empty() || !(r.interval->lower <= r.interval->upper)))
    return ClaimVerdict::Inconclusive;
  if ((r.kind == ClaimKind::ByConstruction || r.evidence == Evidence::ProvenBelow) && r.proof.empty()) return ClaimVerdict::Inconclusive;

  if (r.kind == ClaimKind::ByConstruction)
    // The proof carries the statement; the executed check can still fail, and then the implementation breaks it.
    return r.evidence == Evidence::Counterexample ? ClaimVerdict::Refuted : ClaimVerdict::ByConstruction;
  if (r.protocol == Protocol::StandIn)
    // Another model, metric or protocol can agree or disagree with the claim, never settle it.
    return direction(r.evidence) > 0 ? ClaimVerdict::Consistent : ClaimVerdict::NotReproduced;
  switch (r.evidence) {
    case Evidence::HoldsOnEveryCase:
    case Evidence::Observed:
    case Evidence::IntervalOnClaimSide: return ClaimVerdict::Confirmed;
    case Evidence::Counterexample:
    case Evidence::ProvenBelow:
    case Evidence::IntervalExcludes: return ClaimVerdict::Refuted;
    case Evidence::HoldsOnSample:
    case Evidence::IntervalStraddles: return ClaimVerdict::Consistent;
    case Evidence::NotObserved: return ClaimVerdict::NotReproduced;  // a sample cannot refute "up to"
    default: return ClaimVerdict::Inconclusive;
  }
}

Evidence interval_evidence(const Interval& ci, double claimed, Side side) {
  switch (side) {
    case Side::Above:
      return ci.lower > claimed ? Evidence::IntervalOnClaimSide : ci.upper < claimed ? Evidence::IntervalExcludes : Evidence::IntervalStraddles;
    case Side::Below:
      return ci.upper < claimed ? Evidence::IntervalOnClaimSide : ci.lower > claimed ? Evidence::IntervalExcludes : Evidence::IntervalStraddles;
    case Side::At: return ci.lower <= claimed && claimed <= ci.upper ? Evidence::IntervalStraddles : Evidence::IntervalExcludes;
  }
  return Evidence::IntervalStraddles;
}

Evidence existence_evidence(double reached, double claimed) { return reached >= claimed ? Evidence::Observed : Evidence::NotObserved; }

std::optional<Interval> percentile_bootstrap(std::size_t units, const std::function<std::optional<double>(const std::vector<std::size_t>&)>& statistic,
                                             int resamples, std::uint64_t seed, const std::string& method) {
  if (units < 2) return std::nullopt;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> draw(0, units - 1);
  std::vector<double> values;
  std::vector<std::size_t> pick(units);
  for (int b = 0; b < resamples; ++b) {
    for (auto& i : pick) i = draw(rng);
    if (const auto v = statistic(pick)) values.push_back(*v);
  }
  if (static_cast<int>(values.size()) < resamples / 2) return std::nullopt;
  std::sort(values.begin(), values.end());
  const auto at = [&](double q) { return values[static_cast<std::size_t>(q * static_cast<double>(values.size() - 1))]; };
  return Interval{at(0.025), at(0.975),
                  "percentile bootstrap over " + method + ", " + std::to_string(values.size()) + " resamples, seed " + std::to_string(seed)};
}

Interval wilson_interval(Index successes, Index n) {
  constexpr double z = 1.959963984540054;  // two-sided 95 % normal quantile
  const double nn = static_cast<double>(n), p = static_cast<double>(successes) / nn, z2 = z * z;
  const double centre = (p + z2 / (2 * nn)) / (1 + z2 / nn);
  const double half = z / (1 + z2 / nn) * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn));
  // At p = 0 or 1 the closed form gives the bound up to rounding; the exact end is the observed proportion.
  return {successes == 0 ? 0.0 : centre - half, successes == n ? 1.0 : centre + half, "Wilson score 95 %"};
}

Interval paired_difference_interval(const PairedCounts& c) {
  const double n = static_cast<double>(c.n());
  const double pa = static_cast<double>(c.both + c.only_a) / n, pb = static_cast<double>(c.both + c.only_b) / n;
  const Interval a = wilson_interval(c.both + c.only_a, c.n()), b = wilson_interval(c.both + c.only_b, c.n());
  // phi of the 2x2 table; 0 when a margin is empty (the rates cannot co-vary).
  const double margins = static_cast<double>(c.both + c.only_a) * static_cast<double>(c.only_b + c.neither) *
                         static_cast<double>(c.both + c.only_b) * static_cast<double>(c.only_a + c.neither);
  const double phi = margins > 0 ? (static_cast<double>(c.both) * static_cast<double>(c.neither) -
                                    static_cast<double>(c.only_a) * static_cast<double>(c.only_b)) / std::sqrt(margins)
                                 : 0.0;
  const double lower = std::sqrt(std::max(0.0, (pa - a.lower) * (pa - a.lower) - 2 * phi * (pa - a.lower) * (b.upper - pb) +
                                                   (b.upper - pb) * (b.upper - pb)));
  const double upper = std::sqrt(std::max(0.0, (a.upper - pa) * (a.upper - pa) - 2 * phi * (a.upper - pa) * (pb - b.lower) +
                                                   (pb - b.lower) * (pb - b.lower)));
  return {pa - pb - lower, pa - pb + upper, "Newcombe hybrid score 95 %, paired"};
}

double exact_mcnemar_p(const PairedCounts& c) {
  const Index m = c.only_a + c.only_b, k = std::min(c.only_a, c.only_b);
  if (m == 0) return 1.0;
  // 2 * P(X <= k), X ~ binomial(m, 1/2), summed in logs so that large m stays finite.
  double tail = 0;
  for (Index i = 0; i <= k; ++i)
    tail += std::exp(std::lgamma(static_cast<double>(m) + 1) - std::lgamma(static_cast<double>(i) + 1) -
                     std::lgamma(static_cast<double>(m - i) + 1) - static_cast<double>(m) * std::log(2.0));
  return std::min(1.0, 2 * tail);
}

const char* to_string(ClaimKind k) {
  switch (k) {
    case ClaimKind::Universal: return "universal";
    case ClaimKind::Existence: return "existence";
    case ClaimKind::Comparative: return "comparative";
    case ClaimKind::Statistical: return "statistical";
    case ClaimKind::ByConstruction: return "by-construction";
    case ClaimKind::NotTestable: return "not-testable";
  }
  return "?";
}

const char* to_string(Protocol p) { return p == Protocol::Own ? "own" : "stand-in"; }

const char* to_string(Evidence e) {
  switch (e) {
    case Evidence::NotMeasured: return "not-measured";
    case Evidence::Incomplete: return "incomplete";
    case Evidence::HoldsOnEveryCase: return "holds-on-every-case";
    case Evidence::HoldsOnSample: return "holds-on-sample";
    case Evidence::Counterexample: return "counterexample";
    case Evidence::Observed: return "observed";
    case Evidence::NotObserved: return "not-observed";
    case Evidence::ProvenBelow: return "proven-below";
    case Evidence::IntervalOnClaimSide: return "interval-on-claim-side";
    case Evidence::IntervalStraddles: return "interval-straddles";
    case Evidence::IntervalExcludes: return "interval-excludes";
  }
  return "?";
}

namespace {
template <class E, std::size_t N>
E parse_enum(const std::string& text, const E (&all)[N], const char* what) {
  for (E e : all)
    if (text == to_string(e)) return e;
  throw std::invalid_argument(std::string("not a ") + what + ": '" + text + "'");
}
}  // namespace

ClaimKind parse_claim_kind(const std::string& text) {
  constexpr ClaimKind all[] = {ClaimKind::Universal, ClaimKind::Existence, ClaimKind::Comparative, ClaimKind::Statistical,
                               ClaimKind::ByConstruction, ClaimKind::NotTestable};
  return parse_enum(text, all, "claim kind");
}

Protocol parse_protocol(const std::string& text) {
  constexpr Protocol all[] = {Protocol::Own, Protocol::StandIn};
  return parse_enum(text, all, "protocol");
}

Evidence parse_evidence(const std::string& text) {
  constexpr Evidence all[] = {Evidence::NotMeasured, Evidence::Incomplete, Evidence::HoldsOnEveryCase, Evidence::HoldsOnSample,
                              Evidence::Counterexample, Evidence::Observed, Evidence::NotObserved, Evidence::ProvenBelow,
                              Evidence::IntervalOnClaimSide, Evidence::IntervalStraddles, Evidence::IntervalExcludes};
  return parse_enum(text, all, "evidence");
}

nlohmann::json to_json(const ClaimRow& r) {
  nlohmann::json j = {{"claim", r.claim}, {"source", r.source}, {"measured", r.measured}, {"why", r.why},
                      {"kind", to_string(r.kind)}, {"protocol", to_string(r.protocol)}, {"evidence", to_string(r.evidence)},
                      {"observations", r.observations},
                      {"verdict", to_string(judge_claim(r))}};
  if (r.protocol == Protocol::StandIn) j["stand_in"] = r.stand_in;
  if (r.source_observations) j["source_observations"] = *r.source_observations;
  if (r.interval) j["interval"] = {{"lower", r.interval->lower}, {"upper", r.interval->upper}, {"method", r.interval->method}};
  if (!r.proof.empty()) j["proof"] = r.proof;
  return j;
}

ClaimRow claim_row_from_json(const nlohmann::json& j) {
  ClaimRow r{.claim = j.at("claim").get<std::string>(),
             .source = j.at("source").get<std::string>(),
             .measured = j.at("measured").get<std::string>(),
             .why = j.value("why", ""),
             .kind = parse_claim_kind(j.at("kind").get<std::string>()),
             .protocol = parse_protocol(j.at("protocol").get<std::string>()),
             .stand_in = j.value("stand_in", ""),
             .evidence = parse_evidence(j.at("evidence").get<std::string>()),
             .observations = j.at("observations").get<Index>(),
             .proof = j.value("proof", "")};
  if (j.contains("source_observations")) r.source_observations = j["source_observations"].get<Index>();
  if (j.contains("interval")) {
    const auto& i = j["interval"];
    r.interval = Interval{i.at("lower").get<double>(), i.at("upper").get<double>(), i.at("method").get<std::string>()};
  }
  return r;
}

}  // namespace kvaudit::audit
