// Optimized selectors (core/select) against the oracle: canonical equality, admissibility, invariants.
//
// Equality is demanded wherever both sides must agree bit for bit: the kvpress flavour (both evaluate the
// same float32 operations in the same order) and the exact flavour on exactly representable inputs
// (small integers and dyadic values, where double and 50-digit arithmetic see the same ties). On other
// exact-flavour inputs double and 50-digit statistics may legitimately order near-ties differently, so a
// difference must still be admissible (oracle check_admissible) and is classified, never silently passed.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <set>

#include "audit/selector_cases.h"
#include "core/compression_ratio.h"
#include "core/select/chunk_select.h"
#include "oracle/chunk_selection.h"
#include "tests/support/rapidcheck_cases.h"

namespace kvaudit {
namespace {

// 300 cases per property unless RC_PARAMS sets max_success (read by RapidCheck at the first check).
const bool kDefaultParams = kvaudit_test_support::default_case_count(300);

enum class ValueMode { SmallIntegers, Dyadic, Bf16, Uniform };
const char* mode_name(ValueMode m) {
  switch (m) {
    case ValueMode::SmallIntegers: return "small-integers";
    case ValueMode::Dyadic: return "dyadic";
    case ValueMode::Bf16: return "bf16";
    case ValueMode::Uniform: return "uniform";
  }
  return "?";
}
bool exactly_representable(ValueMode m) { return m == ValueMode::SmallIntegers || m == ValueMode::Dyadic; }

float to_bf16(float v) {  // round to 8 significant bits (bf16), ties away: quantization makes ties
  if (v == 0.0f) return v;
  int e = 0;
  float m = std::frexp(v, &e);
  return std::ldexp(std::round(m * 256.0f) / 256.0f, e);
}

struct Case {
  ValueMode mode = ValueMode::SmallIntegers;
  Index layers = 1, heads = 1, tokens = 1;
  std::vector<float> values;  // (layers, heads, tokens)
  SelectorParams params;
  HeadScores layer(Index l) const {
    const auto n = static_cast<std::size_t>(heads * tokens);
    return {heads, tokens, {values.data() + static_cast<std::size_t>(l) * n, n}};
  }
};

rc::Gen<float> value_gen(ValueMode mode) {
  switch (mode) {
    case ValueMode::SmallIntegers:  // 0..3 with many zeros: ties everywhere
      return rc::gen::weightedElement<float>({{3, 0.0f}, {2, 1.0f}, {2, 2.0f}, {1, 3.0f}});
    case ValueMode::Dyadic:  // k/8 in [-1, 2]: negatives exercise the rebase and the clamp
      return rc::gen::map(rc::gen::inRange(-8, 17), [](int k) { return static_cast<float>(k) / 8.0f; });
    case ValueMode::Bf16:
      return rc::gen::map(rc::gen::inRange(0, 1 << 20), [](int k) { return to_bf16(static_cast<float>(k) / (1 << 20)); });
    case ValueMode::Uniform:
      return rc::gen::map(rc::gen::inRange(-(1 << 22), 1 << 23), [](int k) { return static_cast<float>(k) / (1 << 22) * 0.37f; });
  }
  return rc::gen::just(0.0f);
}

rc::Gen<Case> case_gen() {
  return rc::gen::exec([] {
    Case c;
    c.mode = *rc::gen::element(ValueMode::SmallIntegers, ValueMode::Dyadic, ValueMode::Bf16, ValueMode::Uniform);
    c.layers = *rc::gen::inRange<Index>(1, 4);
    c.heads = *rc::gen::inRange<Index>(1, 4);
    c.tokens = *rc::gen::inRange<Index>(1, 70);
    c.values = *rc::gen::container<std::vector<float>>(static_cast<std::size_t>(c.layers * c.heads * c.tokens),
                                                       value_gen(c.mode));
    SelectorParams& p = c.params;
    p.method = *rc::gen::element(Method::ChunkKV, Method::EgChunkKV);
    p.flavour = *rc::gen::element(Flavour::Kvpress, Flavour::Exact);
    const std::string rho = *rc::gen::element<std::string>("0", "0.1", "0.25", "0.3", "0.5", "0.7", "0.75", "0.9", "0.95", "0.333");
    p.ratio = parse_compression_ratio(rho);
    const bool kvpress_eg = p.method == Method::EgChunkKV && p.flavour == Flavour::Kvpress;
    p.chunk_length = *rc::gen::inRange<Index>(kvpress_eg ? 2 : 1, 13);
    p.rescue_size = *rc::gen::inRange<Index>(1, kvpress_eg ? p.chunk_length : 7);
    if (p.flavour == Flavour::Exact) {
      p.median = *rc::gen::element(MedianRule::Lower, MedianRule::MeanOfMiddles);
      if (*rc::gen::weightedElement<int>({{3, 0}, {1, 1}}))
        p.entropy_threshold = *rc::gen::element(0.0, 0.25, 0.5, 0.9, 1.0);
    }
    return c;
  });
}

bool has_tied_head_sums(const HeadScores& s) {
  std::set<double> seen;
  for (Index t = 0; t < s.tokens; ++t) {
    double x = 0;
    for (Index h = 0; h < s.heads; ++h) x += s.at(h, t);
    if (!seen.insert(x).second) return true;
  }
  return false;
}

void classify(const Case& c) {
  RC_TAG(mode_name(c.mode), c.params.method == Method::ChunkKV ? "chunkkv" : "eg-chunkkv",
         c.params.flavour == Flavour::Kvpress ? "kvpress" : "exact");
  RC_CLASSIFY(has_tied_head_sums(c.layer(0)), "tied-head-sums");
  RC_CLASSIFY(c.params.method == Method::ChunkKV && c.tokens < c.params.chunk_length, "chunkkv-fallback");
}

std::string show(const Positions& p) {
  std::string s;
  for (Index i : p) s += std::to_string(i) + " ";
  return s;
}

RC_GTEST_PROP(CoreSelectProperty, OptimizedEqualsCanonicalOrIsAdmissible, ()) {
  const Case c = *case_gen();
  classify(c);
  const std::vector<Selection> fast = select::select_layers(
      ScoreTensor{c.layers, c.heads, c.tokens, c.values}, c.params);
  RC_ASSERT(static_cast<Index>(fast.size()) == c.layers);
  for (Index l = 0; l < c.layers; ++l) {
    const Selection canonical = oracle::select(c.layer(l), c.params);
    const Selection& got = fast[static_cast<std::size_t>(l)];
    const bool must_equal = c.params.flavour == Flavour::Kvpress || exactly_representable(c.mode);
    if (got.kept != canonical.kept) {
      RC_LOG() << "layer " << l << " optimized " << show(got.kept.at(0)) << "| canonical " << show(canonical.kept.at(0)) << "\n";
      RC_ASSERT(!must_equal);
      RC_TAG("differs-from-canonical-within-rounding");
    }
    const Verdict v = oracle::check_admissible(c.layer(l), c.params, got);
    RC_LOG() << "verdict " << to_string(v.kind) << " " << v.rule << ": " << v.message << "\n";
    RC_ASSERT(v.kind == VerdictKind::Conforms);
  }
}

RC_GTEST_PROP(CoreSelectProperty, BudgetSortedUniqueInRange, ()) {
  const Case c = *case_gen();
  classify(c);
  const SelectorParams& p = c.params;
  const Selection s = select::select_layer(c.layer(0), p);
  const Index T = c.tokens;
  const bool kvpress = p.flavour == Flavour::Kvpress;
  const bool zero = p.ratio.value == 0.0;
  const bool fallback = p.method == Method::ChunkKV && T < p.chunk_length && !zero;
  RC_ASSERT(s.kept.size() == (fallback && kvpress ? static_cast<std::size_t>(c.heads) : 1u));
  for (const Positions& kept : s.kept) {
    for (std::size_t i = 0; i < kept.size(); ++i) {
      RC_ASSERT(kept[i] >= 0 && kept[i] < T);
      if (i > 0) RC_ASSERT(kept[i - 1] < kept[i]);  // strictly increasing: sorted and unique
    }
    Index expected;
    if (zero) {
      expected = T;
    } else if (p.method == Method::EgChunkKV || fallback) {
      expected = kvpress ? kvpress_float_budget(T, p.ratio.value) : exact_budget(T, p.ratio);
    } else {  // whole chunks: m chunks of C, one of which may be the partial tail
      const Index n_chunks = (T + p.chunk_length - 1) / p.chunk_length;
      const Index m = kvpress ? kvpress_float_budget(n_chunks, p.ratio.value) : exact_budget(n_chunks, p.ratio);
      const bool tail_kept = T % p.chunk_length != 0 && std::binary_search(kept.begin(), kept.end(), T - 1);
      expected = tail_kept ? (m - 1) * p.chunk_length + T % p.chunk_length : m * p.chunk_length;
      for (Index pos : kept)  // chunks are kept whole
        for (Index j = pos / p.chunk_length * p.chunk_length; j < std::min(T, (pos / p.chunk_length + 1) * p.chunk_length); ++j)
          RC_ASSERT(std::binary_search(kept.begin(), kept.end(), j));
    }
    RC_ASSERT(static_cast<Index>(kept.size()) == expected);
  }
}

RC_GTEST_PROP(CoreSelectProperty, MultiLayerAndBatchEqualPerLayerCalls, ()) {
  const Case c = *case_gen();
  classify(c);
  const ScoreTensor t{c.layers, c.heads, c.tokens, c.values};
  const std::vector<Selection> all = select::select_layers(t, c.params);
  for (Index l = 0; l < c.layers; ++l)
    RC_ASSERT(all[static_cast<std::size_t>(l)].kept == select::select_layer(c.layer(l), c.params).kept);

  // Into reused storage: whatever an earlier selection left there (more layers, per-head lists, longer
  // lists) must not leak into the result.
  std::vector<Selection> reused(static_cast<std::size_t>(c.layers) + 2);
  for (Selection& r : reused) r.kept.assign(3, Positions(static_cast<std::size_t>(c.tokens) + 5, Index{-7}));
  select::select_layers(t, c.params, reused);
  RC_ASSERT(reused.size() == all.size());
  for (Index l = 0; l < c.layers; ++l) RC_ASSERT(reused[static_cast<std::size_t>(l)].kept == all[static_cast<std::size_t>(l)].kept);

  // A second batch element: the first with its layers reversed, so the two differ.
  ScoreTensor u = t;
  const auto n = static_cast<std::size_t>(c.heads * c.tokens);
  for (Index l = 0; l < c.layers; ++l)
    std::copy_n(t.values.begin() + static_cast<std::ptrdiff_t>((c.layers - 1 - l) * n), n,
                u.values.begin() + static_cast<std::ptrdiff_t>(l * n));
  const std::vector<ScoreTensor> batch{t, u};
  const auto each = select::select_batch(batch, c.params, select::BatchRule::PerElement);
  const auto first = select::select_batch(batch, c.params, select::BatchRule::FirstElement);
  const bool fallback = c.params.method == Method::ChunkKV && c.params.flavour == Flavour::Kvpress &&
                        c.tokens < c.params.chunk_length && c.params.ratio.value != 0.0;
  for (Index l = 0; l < c.layers; ++l) {
    const auto li = static_cast<std::size_t>(l);
    RC_ASSERT(each[0][li].kept == all[li].kept);
    RC_ASSERT(each[1][li].kept == select::select_layers(u, c.params)[li].kept);
    RC_ASSERT(first[0][li].kept == all[li].kept);
    // kvpress shares element 0's selection, except its per-head fallback, which runs per element.
    RC_ASSERT(first[1][li].kept == (fallback ? each[1][li].kept : all[li].kept));
  }
}

// Near-tied entropies: every chunk a permutation of one multiset, so the exact H~ differ only by rounding
// and the fast lanes' H~ (proofs/11_fast_entropy_margin.md) straddle the median differently; the settled gate must still give the
// oracle's selection bit for bit (kvpress flavour, hundreds of chunks so the SIMD blocks run).
RC_GTEST_PROP(CoreSelectProperty, NearTiedEntropiesKvpressEqualsCanonical, ()) {
  SelectorParams p;
  p.method = Method::EgChunkKV;
  p.flavour = Flavour::Kvpress;
  p.chunk_length = *rc::gen::inRange<Index>(2, 25);
  p.rescue_size = *rc::gen::inRange<Index>(1, p.chunk_length);
  p.ratio = parse_compression_ratio(*rc::gen::element<std::string>("0.1", "0.5", "0.75", "0.9"));
  const ValueMode mode = *rc::gen::element(ValueMode::Bf16, ValueMode::Uniform);
  const auto base = *rc::gen::container<std::vector<float>>(static_cast<std::size_t>(p.chunk_length), value_gen(mode));
  const Index n_chunks = *rc::gen::inRange<Index>(8, 300);
  const Index T = n_chunks * p.chunk_length + *rc::gen::inRange<Index>(0, p.chunk_length);
  const auto seed = *rc::gen::arbitrary<std::uint32_t>();
  std::mt19937 rng(seed);
  std::vector<float> chunk = base, values(static_cast<std::size_t>(T));
  for (Index i = 0; i * p.chunk_length < T; ++i) {
    std::shuffle(chunk.begin(), chunk.end(), rng);
    for (Index j = 0; j < p.chunk_length && i * p.chunk_length + j < T; ++j) values[i * p.chunk_length + j] = chunk[j];
  }
  RC_TAG(mode_name(mode));
  const HeadScores view{1, T, values};
  const Selection got = select::select_layer(view, p);
  const Selection canonical = oracle::select(view, p);
  if (got.kept != canonical.kept)
    RC_LOG() << "optimized " << show(got.kept.at(0)) << "| canonical " << show(canonical.kept.at(0)) << "\n";
  RC_ASSERT(got.kept == canonical.kept);
}

// The shared corner-case generators (audit/selector_cases.h): every method x flavour, the same contract.
void check_against_oracle(const audit::SelectorCase& c) {
  RC_TAG(c.kind, c.params.method == Method::ChunkKV ? "chunkkv" : "eg-chunkkv",
         c.params.flavour == Flavour::Kvpress ? "kvpress" : "exact");
  const std::vector<float> storage = audit::flatten(c);
  const HeadScores view = audit::head_scores(c, storage);
  RC_CLASSIFY(has_tied_head_sums(view), "tied-head-sums");
  const Selection got = select::select_layer(view, c.params);
  const Selection canonical = oracle::select(view, c.params);
  if (got.kept != canonical.kept) {
    RC_LOG() << "optimized " << show(got.kept.at(0)) << "| canonical " << show(canonical.kept.at(0)) << "\n";
    RC_ASSERT(c.params.flavour == Flavour::Exact);  // kvpress: same float32 operations, must be equal
    RC_TAG("differs-from-canonical-within-rounding");
  }
  const Verdict v = oracle::check_admissible(view, c.params, got);
  RC_LOG() << "verdict " << to_string(v.kind) << " " << v.rule << ": " << v.message << "\n";
  RC_ASSERT(v.kind == VerdictKind::Conforms);
}

audit::CaseOptions options(Method m, Flavour f) {
  audit::CaseOptions o;
  o.method = m;
  o.flavour = f;
  o.max_tokens = 400;  // the 50-digit oracle is the slow side; corners sit at small T anyway
  return o;
}

RC_GTEST_PROP(CoreSelectProperty, SharedCasesEgChunkKvKvpress, ()) {
  check_against_oracle(*audit::gen_selector_case(options(Method::EgChunkKV, Flavour::Kvpress)));
}
RC_GTEST_PROP(CoreSelectProperty, SharedCasesEgChunkKvExact, ()) {
  check_against_oracle(*audit::gen_selector_case(options(Method::EgChunkKV, Flavour::Exact)));
}
RC_GTEST_PROP(CoreSelectProperty, SharedCasesChunkKvKvpress, ()) {
  check_against_oracle(*audit::gen_selector_case(options(Method::ChunkKV, Flavour::Kvpress)));
}
RC_GTEST_PROP(CoreSelectProperty, SharedCasesChunkKvExact, ()) {
  check_against_oracle(*audit::gen_selector_case(options(Method::ChunkKV, Flavour::Exact)));
}

}  // namespace
}  // namespace kvaudit
