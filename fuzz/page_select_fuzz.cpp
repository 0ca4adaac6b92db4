// Differential libFuzzer harness: optimized Page-EntroKV (core/paging) against the exact oracle
// (oracle/page_entrokv.h). Bytes -> parameters and non-negative attention (layers, q_heads, T). Both must agree
// on validity and budget; per (layer, group) the optimized kept pages must equal the oracle's or be admissible
// for the oracle's exact page scores with ties widened by the float64 page-score bound; the optimized ledger must
// pass the oracle's exact page accounting. Anything else prints the case and traps.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "core/compression_ratio.h"
#include "core/paging/page_score_bound.h"
#include "core/error.h"
#include "core/paging/page_selector.h"
#include "fuzz/fuzz_support.h"
#include "oracle/page_entrokv.h"

using namespace kvaudit;
using kvaudit::fuzz::report_and_trap;
namespace op = kvaudit::oracle::paging;

namespace {

const char* const kRatios[] = {"0", "0.2", "0.5", "0.75", "0.8", "0.9", "0.95", "0.999", ".25", "0.6666"};

// Non-negative attention: a few distinct values (ties), uniform, mixed with zeros, and denormal/huge magnitudes.
float attention(FuzzedDataProvider& in, int regime) {
  switch (regime) {
    case 0: return static_cast<float>(in.ConsumeIntegralInRange(0, 3)) * 0.25f;
    case 1: return in.ConsumeFloatingPointInRange<float>(0.0f, 1.0f);
    case 2: return in.ConsumeBool() ? 0.0f : in.ConsumeFloatingPointInRange<float>(0.0f, 1e-3f);
    default: {
      std::uint32_t bits = in.ConsumeIntegral<std::uint32_t>() & 0x7f7fffffu;  // sign off, exponent below Inf/NaN
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
  }
}

std::string describe(const ScoreTensor& a, const kvaudit::PageParams& p) {
  std::ostringstream o;
  o.precision(9);
  o << "G=" << p.group_size << " P=" << p.page_size << " rho='" << p.ratio_text << "' sinks=" << p.n_sink
    << " pooling=" << static_cast<int>(p.pooling) << " source=" << static_cast<int>(p.source)
    << " page_score=" << static_cast<int>(p.page_score) << " sink_pages=" << static_cast<int>(p.sink_pages)
    << " greedy=" << static_cast<int>(p.greedy) << "\nattn (" << a.layers << ", " << a.heads << ", " << a.tokens << "):";
  for (Index l = 0; l < a.layers; ++l)
    for (Index h = 0; h < a.heads; ++h) {
      o << "\n ";
      for (float v : a.row(l, h)) o << ' ' << v;
    }
  return o.str();
}

std::string list(const std::vector<Index>& v) {
  std::string s = "[";
  for (Index x : v) s += std::to_string(x) + " ";
  return s + "]";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  kvaudit::PageParams p;
  p.group_size = in.ConsumeIntegralInRange<Index>(1, 3);
  p.page_size = in.ConsumeIntegralInRange<Index>(0, 9);
  p.n_sink = in.ConsumeIntegralInRange<Index>(-1, 6);
  p.ratio_text = parse_compression_ratio(in.PickValueInArray(kRatios), "fuzz").text;
  p.pooling = in.ConsumeBool() ? kvaudit::PagePooling::Entropy : kvaudit::PagePooling::Mean;
  p.source = in.ConsumeBool() ? kvaudit::PoolSource::SinkIsolated : kvaudit::PoolSource::Raw;
  p.page_score = in.ConsumeBool() ? kvaudit::PageScore::Sum : kvaudit::PageScore::Max;
  p.sink_pages = in.ConsumeBool() ? kvaudit::SinkPages::Reserved : kvaudit::SinkPages::Scored;
  p.greedy = in.ConsumeBool() ? kvaudit::GreedyRule::SkipMisfits : kvaudit::GreedyRule::StopAtFirstMisfit;
  ScoreTensor a;
  a.layers = in.ConsumeIntegralInRange<Index>(1, 2);
  a.heads = p.group_size * in.ConsumeIntegralInRange<Index>(1, 2) + (in.ConsumeIntegralInRange(0, 7) == 0 ? 1 : 0);
  a.tokens = in.ConsumeIntegralInRange<Index>(0, 48);
  const int regime = in.ConsumeIntegralInRange(0, 3);
  a.values.resize(static_cast<std::size_t>(a.layers * a.heads * a.tokens));
  for (float& v : a.values) v = attention(in, regime);

  const PageParams& q = p;

  paging::PageSelection fast;
  op::PagedSelection exact;
  std::string fast_error, oracle_error;
  try {
    fast = paging::select_pages(a, p);
  } catch (const InputError& e) {
    fast_error = e.what();
  }
  // T = 0 and a negative sink count are outside the oracle's preconditions (it does not validate n_sink and
  // would index p[-1]); the optimized selector must reject both, and the oracle is not consulted.
  const bool cli_invalid = a.tokens < 1 || p.n_sink < 0;
  if (cli_invalid) {
    if (fast_error.empty()) report_and_trap("page select: optimized accepts T = 0 or negative sinks", describe(a, p));
    return 0;
  }
  try {
    exact = op::page_entrokv(a, q);
  } catch (const std::invalid_argument& e) {
    oracle_error = e.what();
  }
  // Only a rejection by the oracle that the optimized code accepts, or the reverse, is a disagreement.
  if (!oracle_error.empty() && fast_error.empty())
    report_and_trap("page select: optimized accepts what the oracle rejects", describe(a, p) + "\noracle: " + oracle_error);
  if (!fast_error.empty() && oracle_error.empty())
    report_and_trap("page select: optimized rejects a valid input", describe(a, p) + "\noptimized: " + fast_error);
  if (!fast_error.empty() || !oracle_error.empty()) return 0;

  if (fast.budget != exact.budget || fast.pages != exact.ledger.pages)
    report_and_trap("page select: budget or page count differs", describe(a, p));
  const auto layout = op::page_layout(a.tokens, p.page_size);
  const op::Exact rel_tol(paging::page_score_rel_bound(paging::ScorePrecision::Float64, a.tokens, p.group_size, p.page_size));
  op::PageLedger ledger{fast.layers, fast.groups, fast.pages, fast.ledger};
  std::vector<Positions> token_sets;
  for (Index l = 0; l < fast.layers; ++l) {
    for (Index g = 0; g < fast.groups; ++g) {
      const auto& group = exact.groups[static_cast<std::size_t>(l * fast.groups + g)];
      const std::vector<Index> mine = fast.kept_pages(l, g);
      token_sets.push_back(fast.kept_tokens(l, g));
      if (mine == group.kept_pages) continue;
      Verdict v = op::check_pages_admissible(group.page_scores, layout, group.reserved, exact.budget, q.greedy, mine, rel_tol);
      if (!v.passed())
        report_and_trap("page select: optimized pages neither the oracle's nor admissible",
                        describe(a, p) + "\nlayer " + std::to_string(l) + " group " + std::to_string(g) + "\noptimized: " +
                            list(mine) + "\noracle: " + list(group.kept_pages) + "\nverdict: " + v.rule + ": " + v.message);
    }
  }
  Verdict acc = op::check_page_accounting(ledger, token_sets, a.tokens, p.page_size, fast.budget);
  if (!acc.passed()) report_and_trap("page select: optimized ledger fails exact accounting", describe(a, p) + "\n" + acc.rule + ": " + acc.message);
  return 0;
}
