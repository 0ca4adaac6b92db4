// Check of proofs/15_filtered_admissibility.md: the admissibility checker's filtered arithmetic (double enclosures,
// 50 digits only near a tie) gives the same verdict, rule and message as the naive 50-digit reference, and the
// filtered canonical selection (oracle::select with Arithmetic::Filtered) the naive selection,
//   - on generated ChunkKV / EG-ChunkKV cases (both flavours, both rounding models) with ties and near-ties placed
//     where the walk compares: a kept chunk copied over a dropped one (chunk-order cut, medians), a kept position
//     copied over a dropped one of the same chunk (within-chunk cut, top-up), the fixed threshold set to a chunk's
//     own entropy (the spiky gate), one value moved by one float ulp; claims: the canonical selection, it with one
//     kept and one dropped position exchanged, and it with one kept and one dropped chunk exchanged;
//   - on the recorded kvpress selections of the shipped dumps (every one with KVAUDIT_FILTER_EVERY_LAYER=1; SKIPPED
//     without data/);
// and every 50-digit bound lies inside its enclosure, with equal tie keys only on equal 50-digit values; and the
// static entropy bound (entropy_by_static_bound) encloses the 50-digit entropy on chunks harder than those cases; and
// products and quotients of doubles are points exactly when exact (item 3).
// Case count: KVAUDIT_FILTER_CASES (default 100,000) for the generated part.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "audit/dump_conformance.h"
#include "audit/selector_cases.h"
#include "core/io/dump.h"
#include "oracle/admissibility_bounds.h"
#include "oracle/chunk_selection.h"
#include "proofs/proof_report.h"
#include "tests/support/rapidcheck_cases.h"

namespace kvaudit::oracle {
namespace {

using proofs::ProofReport;

long case_count() {
  const char* v = std::getenv("KVAUDIT_FILTER_CASES");
  return v ? std::atol(v) : 100000;
}

const bool kParams = kvaudit_test_support::default_case_count(case_count());

struct Tally {
  long cases = 0, claims = 0, decided_in_double = 0, fell_back = 0, token_values_only = 0, undecided_bounds = 0, keyed_pairs = 0;
  long selections = 0, selections_with_fifty_digits = 0;  // filtered canonical selections (exact flavour)
  std::map<std::string, long> placements;
};
Tally& tally() {
  static Tally t;
  return t;
}

std::string text(const Verdict& v) { return std::string(to_string(v.kind)) + " " + v.rule + ": " + v.message; }

struct Owned {
  std::vector<float> storage;
  HeadScores view;
  explicit Owned(const audit::SelectorCase& c) : storage(audit::flatten(c)), view(audit::head_scores(c, storage)) {}
};

// Every 50-digit end inside its enclosure; ends with equal tie keys have equal 50-digit values.
void assert_enclosed(const HeadScores& s, const SelectorParams& p, Rounding r) {
  const bool eg = p.method == Method::EgChunkKV, clamp = eg && p.flavour == Flavour::Exact;
  const auto reference = detail::selector_bounds<detail::Real>(s, p, r, clamp, eg);
  detail::SelectorBoundsOf<detail::DoubleEnclosure> filtered;
  try {
    filtered = detail::selector_bounds<detail::DoubleEnclosure>(s, p, r, clamp, eg);
  } catch (const detail::UndecidedInDouble&) {
    ++tally().undecided_bounds;
    return;
  }
  std::map<std::tuple<int, double, double, double, double, double>, detail::Real> by_key;
  auto check = [&](const detail::Real& v, const detail::DoubleEnclosure& e) {
    RC_ASSERT(detail::Real(e.lo()) <= v);
    RC_ASSERT(v <= detail::Real(e.hi()));
    if (const detail::TieKey* k = e.key()) {
      auto [it, added] = by_key.try_emplace({static_cast<int>(k->formula), k->a, k->b, k->c, k->d, k->e}, v);
      if (!added) {
        ++tally().keyed_pairs;
        if (it->second != v)
          RC_FAIL("equal tie keys (formula " + std::to_string(static_cast<int>(k->formula)) + ") on unequal 50-digit values " +
                  it->second.str(60) + " and " + v.str(60));
      }
    }
  };
  auto each = [&](const auto& ref, const auto& fil) {
    RC_ASSERT(ref.size() == fil.size());
    for (std::size_t i = 0; i < ref.size(); ++i) {
      check(ref[i].lo, fil[i].lo);
      check(ref[i].hi, fil[i].hi);
    }
  };
  each(reference.x, filtered.x);
  each(reference.score, filtered.score);
  each(reference.entropy, filtered.entropy);
}

void copy_column(audit::SelectorCase& c, Index from, Index to) {
  for (auto& row : c.scores) row[static_cast<std::size_t>(to)] = row[static_cast<std::size_t>(from)];
}

std::vector<Index> kept_mask_positions(const std::vector<bool>& keep, bool kept, Index begin, Index end) {
  std::vector<Index> out;
  for (Index j = begin; j < end; ++j)
    if (keep[static_cast<std::size_t>(j)] == kept) out.push_back(j);
  return out;
}

Positions positions_of(const std::vector<bool>& keep) {
  Positions p;
  for (std::size_t j = 0; j < keep.size(); ++j)
    if (keep[j]) p.push_back(static_cast<Index>(j));
  return p;
}

RC_GTEST_PROP(FilteredAdmissibility, SameVerdictRuleAndMessageAsTheFiftyDigitReference, ()) {
  const Method method = *rc::gen::element(Method::EgChunkKV, Method::ChunkKV);
  const Flavour flavour = *rc::gen::element(Flavour::Kvpress, Flavour::Exact);
  audit::CaseOptions o;
  o.method = method;
  o.flavour = flavour;
  o.max_tokens = 64;
  audit::SelectorCase c = *audit::gen_selector_case(o);
  const Index T = c.tokens(), C = c.params.chunk_length;

  // Place a tie or near-tie where the canonical walk decides.
  std::vector<bool> keep(static_cast<std::size_t>(T), false);
  {
    Owned s(c);
    Selection canonical = select(s.view, c.params);
    for (const Positions& h : canonical.kept)
      for (Index p : h) keep[static_cast<std::size_t>(p)] = true;
  }
  const std::string placement =
      *rc::gen::element<std::string>("chunk-copy", "position-copy", "threshold-at-entropy", "ulp-move", "spread-magnitudes", "none");
  if (placement == "chunk-copy" && T >= 2 * C) {
    std::vector<Index> kept_chunks, dropped_chunks;
    for (Index b = 0; b + C <= T; b += C) (keep[static_cast<std::size_t>(b)] ? kept_chunks : dropped_chunks).push_back(b / C);
    if (!kept_chunks.empty() && !dropped_chunks.empty()) {
      Index from = *rc::gen::elementOf(kept_chunks), to = *rc::gen::elementOf(dropped_chunks);
      for (Index k = 0; k < C; ++k) copy_column(c, from * C + k, to * C + k);
      ++tally().placements[placement];
    }
  } else if (placement == "position-copy") {
    Index chunk_begin = *rc::gen::inRange<Index>(0, (T + C - 1) / C) * C, chunk_end = std::min(chunk_begin + C, T);
    auto kept = kept_mask_positions(keep, true, chunk_begin, chunk_end), dropped = kept_mask_positions(keep, false, chunk_begin, chunk_end);
    if (kept.empty() || dropped.empty()) {
      kept = kept_mask_positions(keep, true, 0, T);
      dropped = kept_mask_positions(keep, false, 0, T);
    }
    if (!kept.empty() && !dropped.empty()) {
      copy_column(c, *rc::gen::elementOf(kept), *rc::gen::elementOf(dropped));
      ++tally().placements[placement];
    }
  } else if (placement == "threshold-at-entropy" && method == Method::EgChunkKV && flavour == Flavour::Exact) {
    Owned s(c);
    auto stats = eg_chunk_statistics(s.view, c.params);
    if (!stats.empty()) {
      c.params.entropy_threshold = (*rc::gen::elementOf(stats)).entropy;
      ++tally().placements[placement];
    }
  } else if (placement == "spread-magnitudes") {
    // Columns mixing huge, unit and subnormal scores of both signs: exact head sums beyond 50 digits (equal in 50
    // digits though different), head sums a pair of doubles cannot hold, and negative ones the exact flavour clamps.
    const std::vector<float> pool{3.0e38f, -3.0e38f, 1.0f, -1.0f, 1e-40f, -1e-40f, 0.0f};
    for (Index t = 0; t < T; ++t)
      if (*rc::gen::inRange(0, 2) == 0)
        for (auto& row : c.scores) row[static_cast<std::size_t>(t)] = *rc::gen::elementOf(pool);
    ++tally().placements[placement];
  } else if (placement == "ulp-move") {
    auto& row = c.scores[static_cast<std::size_t>(*rc::gen::inRange<Index>(0, c.heads()))];
    float& v = row[static_cast<std::size_t>(*rc::gen::inRange<Index>(0, T))];
    v = std::nextafter(v, *rc::gen::element(-1.0f, 1.0f) * std::numeric_limits<float>::infinity());
    ++tally().placements[placement];
  }
  RC_TAG(placement);
  Owned s(c);
  Selection canonical;
  try {
    canonical = select(s.view, c.params);
  } catch (const std::invalid_argument&) {
    RC_DISCARD("the moved value made the case invalid");
  }

  // The filtered canonical selection (double enclosures, 50 digits per undecided comparison) is the naive one.
  {
    ArithmeticCounts counts;
    const Selection filtered = select(s.view, c.params, Arithmetic::Filtered, &counts);
    if (filtered.kept != canonical.kept) RC_FAIL("the filtered canonical selection differs from the naive one");
    tally().selections += counts.decided_in_double + counts.fell_back_to_50_digits;
    tally().selections_with_fifty_digits += counts.fell_back_to_50_digits;
  }

  // Claims: canonical, one position exchanged, one chunk exchanged (each where possible).
  std::vector<Selection> claims{canonical};
  if (canonical.kept.size() == 1) {
    std::vector<bool> k(static_cast<std::size_t>(T), false);
    for (Index p : canonical.kept[0]) k[static_cast<std::size_t>(p)] = true;
    auto kept = kept_mask_positions(k, true, 0, T), dropped = kept_mask_positions(k, false, 0, T);
    if (!kept.empty() && !dropped.empty()) {
      auto swapped = k;
      swapped[static_cast<std::size_t>(*rc::gen::elementOf(kept))] = false;
      swapped[static_cast<std::size_t>(*rc::gen::elementOf(dropped))] = true;
      claims.push_back(Selection{{positions_of(swapped)}});
      std::vector<Index> whole_kept, whole_dropped;
      for (Index b = 0; b + C <= T; b += C) {
        auto in = kept_mask_positions(k, true, b, b + C);
        if (static_cast<Index>(in.size()) == C) whole_kept.push_back(b);
        if (in.empty()) whole_dropped.push_back(b);
      }
      if (!whole_kept.empty() && !whole_dropped.empty()) {
        auto chunks = k;
        Index from = *rc::gen::elementOf(whole_kept), to = *rc::gen::elementOf(whole_dropped);
        for (Index j = 0; j < C; ++j) {
          chunks[static_cast<std::size_t>(from + j)] = false;
          chunks[static_cast<std::size_t>(to + j)] = true;
        }
        claims.push_back(Selection{{positions_of(chunks)}});
      }
    }
  }

  for (Rounding r : {Rounding::Float32Evaluation, Rounding::ExactOnly}) {
    assert_enclosed(s.view, c.params, r);
    for (const Selection& claim : claims) {
      ArithmeticCounts counts;
      AdmissibilityOptions filtered{r}, reference{r};
      filtered.counts = &counts;
      reference.arithmetic = Arithmetic::Reference50Digit;
      const Verdict a = check_admissible(s.view, c.params, claim, filtered);
      const Verdict b = check_admissible(s.view, c.params, claim, reference);
      if (a.kind != b.kind || a.rule != b.rule || a.message != b.message)
        RC_FAIL("filtered: " + text(a) + "\nreference: " + text(b));
      ++tally().claims;
      tally().decided_in_double += counts.decided_in_double;
      tally().fell_back += counts.fell_back_to_50_digits;
      tally().token_values_only += counts.token_values_in_50_digits;
    }
  }
  ++tally().cases;
}

// A float32-like value: a signed 24-bit significand times 2^(e - 24), e in [low_exponent, high_exponent).
rc::Gen<double> float32_like(int low_exponent, int high_exponent) {
  return rc::gen::map(rc::gen::pair(rc::gen::inRange(-(1 << 24), 1 << 24), rc::gen::inRange(low_exponent, high_exponent)),
                      [](std::pair<int, int> m) { return std::ldexp(static_cast<double>(m.first), m.second - 24); });
}
// An eps across [2^-900, 1]: 10-bit significands at every binary order.
rc::Gen<double> eps_across_orders() {
  return rc::gen::map(rc::gen::inRange(-900, 1), [](int e) { return std::ldexp(1.0 + std::ldexp(static_cast<double>(e & 1023), -10), e - 1); });
}

// The static entropy bound on its own, over harder chunks than the selector cases reach: values across the float32
// range times a few heads (tiny, huge, negative, zero, pooled ties), n up to 300, eps across [2^-900, 1]. The 50-digit
// precise_entropy lies inside entropy_by_static_bound; the tally keeps how much of the bound was used.
struct StaticEntropyTally {
  long chunks = 0, clamped = 0;
  double max_used = 0;  // max |H50 - centre| / half-width over unclamped enclosures
};
StaticEntropyTally& static_tally() {
  static StaticEntropyTally t;
  return t;
}

RC_GTEST_PROP(FilteredAdmissibility, StaticEntropyBoundEnclosesTheFiftyDigitEntropy, ()) {
  const auto n = static_cast<Index>(*rc::gen::weightedOneOf<int>({{15, rc::gen::inRange(2, 33)}, {1, rc::gen::inRange(33, 301)}}));
  const std::vector<double> pool = *rc::gen::container<std::vector<double>>(
      4, float32_like(-149, 128));
  std::vector<detail::DoubleEnclosure> x;
  std::vector<detail::Real> reference_x;
  for (Index j = 0; j < n; ++j) {
    const double v = *rc::gen::weightedOneOf<double>(
        {{4, rc::gen::elementOf(pool)},
         {1, rc::gen::just(0.0)},
         {4, float32_like(-149, 131)}});
    x.emplace_back(v);
    reference_x.emplace_back(v);
  }
  const double eps = *rc::gen::weightedOneOf<double>(
      {{2, rc::gen::element(1e-8, 1.0, 0x1p-900, 0.5, 1e-300)},
       {3, eps_across_orders()}});
  RC_PRE(eps >= 0x1p-900 && eps <= 1.0);
  const detail::Chunk chunk{0, n};
  const auto enclosure = detail::entropy_by_static_bound(x, chunk, detail::DoubleEnclosure(eps));
  RC_ASSERT(enclosure.has_value());
  const detail::Real h = detail::precise_entropy(reference_x, chunk, detail::Real(eps));
  RC_ASSERT(detail::Real(enclosure->lo()) <= h);
  RC_ASSERT(h <= detail::Real(enclosure->hi()));
  ++static_tally().chunks;
  if (enclosure->lo() <= 0.0 || enclosure->hi() >= 1.0) {
    ++static_tally().clamped;
  } else {
    const detail::Real centre = (detail::Real(enclosure->lo()) + detail::Real(enclosure->hi())) / 2;
    const detail::Real half = (detail::Real(enclosure->hi()) - detail::Real(enclosure->lo())) / 2;
    static_tally().max_used = std::max(static_tally().max_used, static_cast<double>(abs(h - centre) / half));
  }
}

// Item 11 on its own: chunks of equal head sums but one (a tiny or huge score among zeros, or above a negative floor),
// eps across [2^-900, 1]. Where entropy_of_one_value gives an enclosure, the 50-digit precise_entropy lies inside it;
// the tally keeps how many were exactly 0 and how many were shown positive (the tiny entropies it exists for).
struct OneValueTally {
  long chunks = 0, enclosed = 0, zero = 0, positive = 0;
};
OneValueTally& one_value_tally() {
  static OneValueTally t;
  return t;
}

RC_GTEST_PROP(FilteredAdmissibility, OneValueEntropyEnclosesTheFiftyDigitEntropy, ()) {
  const auto n = *rc::gen::inRange<Index>(2, 41);
  const double floor = *rc::gen::weightedOneOf<double>({{3, rc::gen::just(0.0)}, {1, float32_like(-149, 131)}});
  // Mostly above the floor (one nonzero rebased value), mostly by a tiny amount; sometimes anywhere.
  const double above = std::fabs(*rc::gen::weightedOneOf<double>({{3, float32_like(-149, -20)}, {1, float32_like(-149, 131)}}));
  const double single = *rc::gen::weightedOneOf<double>({{4, rc::gen::just(floor + above)}, {1, float32_like(-149, 131)}});
  const auto at = static_cast<std::size_t>(*rc::gen::inRange<Index>(0, n));
  const double eps = *rc::gen::weightedOneOf<double>(
      {{2, rc::gen::element(1e-8, 1.0, 0x1p-900, 0.5, 1e-3)}, {3, eps_across_orders()}});
  std::vector<detail::DoubleEnclosure> x(static_cast<std::size_t>(n), detail::DoubleEnclosure(floor));
  std::vector<detail::Real> reference_x(static_cast<std::size_t>(n), detail::Real(floor));
  x[at] = detail::DoubleEnclosure(single);
  reference_x[at] = detail::Real(single);
  const detail::Chunk chunk{0, n};
  ++one_value_tally().chunks;
  const auto enclosure = detail::entropy_of_one_value(x, chunk, detail::DoubleEnclosure(eps));
  if (!enclosure) return;
  const detail::Real h = detail::precise_entropy(reference_x, chunk, detail::Real(eps));
  RC_ASSERT(detail::Real(enclosure->lo()) <= h);
  RC_ASSERT(h <= detail::Real(enclosure->hi()));
  ++one_value_tally().enclosed;
  if (enclosure->hi() == 0.0) ++one_value_tally().zero;
  else if (enclosure->lo() > 0.0) ++one_value_tally().positive;
}

// Item 3's exactness test (is_product, reading significands from the representation): a product or quotient of two
// doubles is a point exactly when the double result is the exact one, and its enclosure holds the 50-digit result
// (a product of doubles is exact in 50 digits; a quotient's point is checked by multiplying back).
rc::Gen<double> any_double() {
  return rc::gen::weightedOneOf<double>(
      {{2, rc::gen::map(rc::gen::arbitrary<std::uint64_t>(), [](std::uint64_t b) { return std::bit_cast<double>(b); })},
       {2, rc::gen::map(rc::gen::arbitrary<std::uint64_t>(),  // subnormals
                        [](std::uint64_t b) { return std::bit_cast<double>(b & 0x800fffffffffffffULL); })},
       {4, rc::gen::map(rc::gen::pair(rc::gen::inRange(-4096, 4097), rc::gen::inRange(-1100, 1100)),  // short significands
                        [](std::pair<int, int> m) { return std::ldexp(static_cast<double>(m.first), m.second); })},
       {1, rc::gen::map(rc::gen::inRange(-800, 801), [](int m) { return m / 8.0; })}});
}
RC_GTEST_PROP(FilteredAdmissibility, ProductsAndQuotientsArePointsExactlyWhenExact, ()) {
  const double a = *any_double(), b = *any_double();
  RC_PRE(std::isfinite(a) && std::isfinite(b));
  const detail::DoubleEnclosure product = detail::DoubleEnclosure(a) * detail::DoubleEnclosure(b);
  const detail::Real exact = detail::Real(a) * detail::Real(b);
  if (std::isfinite(product.lo()) && std::isfinite(product.hi())) {
    RC_ASSERT(detail::Real(product.lo()) <= exact);
    RC_ASSERT(exact <= detail::Real(product.hi()));
  }
  RC_ASSERT((product.lo() == product.hi()) == (std::isfinite(a * b) && detail::Real(a * b) == exact));
  RC_PRE(b != 0.0);
  const detail::DoubleEnclosure quotient = detail::DoubleEnclosure(a) / detail::DoubleEnclosure(b);
  const double q = a / b;
  const bool exact_quotient = std::isfinite(q) && detail::Real(q) * detail::Real(b) == detail::Real(a);
  RC_ASSERT((quotient.lo() == quotient.hi()) == exact_quotient);
  if (std::isfinite(quotient.lo()) && std::isfinite(quotient.hi())) {
    const detail::Real fifty_digit = detail::Real(a) / detail::Real(b);
    RC_ASSERT(detail::Real(quotient.lo()) <= fifty_digit);
    RC_ASSERT(fifty_digit <= detail::Real(quotient.hi()));
  }
}

TEST(FilteredAdmissibility, ZStaticEntropyCoverage) {
  const StaticEntropyTally& t = static_tally();
  ASSERT_GE(t.chunks, case_count()) << "the static-bound property ran fewer cases than asked";
  ASSERT_GT(t.chunks, t.clamped) << "every enclosure was clamped: nothing was measured against the bound";
  ProofReport::get().cover("static-entropy", std::to_string(t.chunks) + " chunks (" + std::to_string(t.clamped) +
                                                 " clamped to [0, 1]); largest |H50 - centre| / half-width " +
                                                 std::to_string(t.max_used));
}

TEST(FilteredAdmissibility, ZOneValueEntropyCoverage) {
  const OneValueTally& t = one_value_tally();
  ASSERT_GE(t.chunks, case_count()) << "the one-value property ran fewer cases than asked";
  ASSERT_GT(t.zero, 0) << "no chunk's entropy was shown to be exactly 0";
  ASSERT_GT(t.positive, 0) << "no chunk's tiny entropy was shown positive";
  ProofReport::get().cover("one-value-entropy", std::to_string(t.chunks) + " chunks, " + std::to_string(t.enclosed) + " enclosed (" +
                                                    std::to_string(t.zero) + " exactly 0, " + std::to_string(t.positive) +
                                                    " shown positive)");
}

TEST(FilteredAdmissibility, ZGeneratedCoverage) {
  const Tally& t = tally();
  ASSERT_GE(t.cases, case_count()) << "the property ran fewer cases than asked";
  ASSERT_GT(t.fell_back, 0) << "no generated case reached the 50-digit fallback: the near-ties do not reach the filter";
  ASSERT_GT(t.token_values_only, 0) << "no rule stage compared near-tied token values in 50 digits (item 17)";
  ASSERT_GT(t.fell_back, t.token_values_only) << "no rule stage re-ran in 50 digits";
  ASSERT_GT(t.keyed_pairs, 0) << "no two ends shared a tie key";
  ASSERT_GT(t.selections_with_fifty_digits, 0) << "no filtered canonical selection needed a 50-digit value: the near-ties do not reach it";
  ASSERT_GT(t.selections, t.selections_with_fifty_digits) << "every filtered canonical selection needed 50 digits";
  std::string placements;
  for (const auto& [k, n] : t.placements) placements += (placements.empty() ? "" : ", ") + k + " " + std::to_string(n);
  ProofReport::get().cover("generated", std::to_string(t.cases) + " cases, " + std::to_string(t.claims) + " claims (" + placements +
                                            "); rule stages decided in double " + std::to_string(t.decided_in_double) +
                                            ", fell back " + std::to_string(t.fell_back) + " (" + std::to_string(t.token_values_only) +
                                            " for near-tied token values only); filtered canonical selections " +
                                            std::to_string(t.selections) + ", " + std::to_string(t.selections_with_fifty_digits) +
                                            " of them with some 50-digit value; bounds undecided " +
                                            std::to_string(t.undecided_bounds) + "; keyed pairs equal " + std::to_string(t.keyed_pairs));
}

// The 50-digit reference costs about 10 CPU-minutes over all 11,904 recorded selections (up to 0.3 s each at
// T = 16,618), too much for every CTest run: by default layers 0, L/2 and L-1 of every prompt, press and ratio;
// KVAUDIT_FILTER_EVERY_LAYER=1 checks every layer (run for the figures in docs/chunk-selection.md).
bool every_layer() {
  const char* v = std::getenv("KVAUDIT_FILTER_EVERY_LAYER");
  return v != nullptr && std::string(v) == "1";
}

TEST(FilteredAdmissibility, ZRecordedSelections) {
  const char* root = std::getenv("KVAUDIT_ROOT");
  const auto data = std::filesystem::path(root ? root : ".") / "data";
  if (!std::filesystem::exists(data / "manifest.json")) GTEST_SKIP() << "SKIPPED: no shipped dumps under " << data;
  long selections = 0, fell_back = 0, decided = 0;
  for (const auto& d : io::load_all_dumps(data.string())) {
    for (const auto& [name, tensor] : d.tensors) {
      const auto k = io::parse_kept_name(name);
      if (!k) continue;
      const auto config = audit::parse_dump_press(k->press);
      if (!config) continue;
      const SelectorParams params = audit::dump_case_params(*config, k->ratio);
      for (Index layer = 0; layer < d.layers; ++layer) {
        if (!every_layer() && layer != 0 && layer != d.layers / 2 && layer != d.layers - 1) continue;
        const HeadScores s = d.ranked_scores(k->press, layer);
        Selection claim{{io::kept_positions(tensor, layer)}};
        ArithmeticCounts counts;
        AdmissibilityOptions filtered, reference;
        filtered.counts = &counts;
        reference.arithmetic = Arithmetic::Reference50Digit;
        const Verdict a = check_admissible(s, params, claim, filtered);
        const Verdict b = check_admissible(s, params, claim, reference);
        ASSERT_EQ(text(a), text(b)) << d.key() << " " << name << " layer " << layer;
        ++selections;
        decided += counts.decided_in_double;
        fell_back += counts.fell_back_to_50_digits;
      }
    }
  }
  ASSERT_GT(selections, 0);
  ProofReport::get().cover("recorded", std::to_string(selections) + " recorded selections (" +
                                           (every_layer() ? "every layer" : "layers 0, L/2, L-1") + "); rule stages decided in double " +
                                           std::to_string(decided) + ", fell back " + std::to_string(fell_back));
}

TEST(FilteredAdmissibility, ZZVerdict) {
  // Without the shipped dumps the recorded part reports SKIPPED and the verdict rests on the generated part.
  const bool dumps = ProofReport::get().has("recorded");
  ProofReport::get().conclude("15_filtered_admissibility", "proved-and-checked",
                              dumps ? std::vector<std::string>{"generated", "static-entropy", "recorded"}
                                    : std::vector<std::string>{"generated", "static-entropy"});
}

}  // namespace
}  // namespace kvaudit::oracle
