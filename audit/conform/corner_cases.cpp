// Weighted corner-case generator for conform runs (see corner_cases.h for why it exists).
#include "audit/conform/corner_cases.h"

#include <cmath>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/compression_ratio.h"

namespace kvaudit::conform {
namespace {

// Ratios where the float rule int(T (1 - rho)) and the exact rule floor(T (1 - rho)) part for many T
// (0.9, 0.7, 0.8, 0.95, 0.35, ...), plus the everyday ones. "0.5" first: shrinking moves toward it.
const std::vector<std::string> kRatios = {"0.5", "0.9", "0.75", "0.7", "0.8", "0.95", "0.35", "0.1",
                                          "0.3", "0.6", "0.25", "0.85", "0.45", "0.65", "0"};

// Score styles: each makes a different rule observable.
rc::Gen<float> score_values(int style) {
  switch (style) {
    case 0:  // heavy ties, sums exact in float32
      return rc::gen::elementOf(std::vector<float>{0.0f, 1.0f, 2.0f, 3.0f});
    case 1:  // distinct-ish small integers
      return rc::gen::map(rc::gen::inRange(0, 101), [](int v) { return static_cast<float>(v); });
    case 2:  // spikes: mostly flat, some large values -> low-entropy chunks
      return rc::gen::weightedOneOf<float>(
          {{6, rc::gen::elementOf(std::vector<float>{0.0f, 1.0f})},
           {1, rc::gen::map(rc::gen::inRange(20, 1000), [](int v) { return static_cast<float>(v); })}});
    case 3:  // signed: the released code ranks raw sums and rebases negative chunks for the entropy
      return rc::gen::map(rc::gen::inRange(-8, 9), [](int v) { return static_cast<float>(v); });
    case 4:  // bf16-like: 8 significant bits at mixed scales, as real dumped scores
      return rc::gen::map(rc::gen::tuple(rc::gen::inRange(0, 256), rc::gen::inRange(0, 12)),
                          [](std::tuple<int, int> t) { return std::ldexp(static_cast<float>(std::get<0>(t)), -std::get<1>(t)); });
    default:  // arbitrary floats in [0, 1): sums round, the checker's tolerance is exercised
      return rc::gen::map(rc::gen::inRange(0, 1 << 24), [](int v) { return std::ldexp(static_cast<float>(v), -24); });
  }
}

}  // namespace

rc::Gen<ConformCase> corner_cases(Method method, Flavour flavour) {
  const bool eg_kvpress = method == Method::EgChunkKV && flavour == Flavour::Kvpress;
  auto heads = rc::gen::inRange<Index>(1, 5);
  // T in [1, 160], 60 % of draws <= 40: one monotone map of one range, so T shrinks all the way to 1 (a
  // weightedOneOf of two ranges would strand shrinking at the second range's lower end).
  auto tokens = rc::gen::map(rc::gen::inRange<Index>(0, 200),
                             [](Index u) { return u < 120 ? 1 + u / 3 : 41 + (u - 120) * 3 / 2; });
  auto chunk = rc::gen::inRange<Index>(eg_kvpress ? 2 : 1, 13);
  auto ratio = rc::gen::inRange<std::size_t>(0, kRatios.size());
  auto style = rc::gen::inRange(0, 6);
  return rc::gen::mapcat(
      rc::gen::tuple(heads, tokens, chunk, ratio, style),
      [=](std::tuple<Index, Index, Index, std::size_t, int> outer) {
        // Plain variables, not a structured binding: clang < 16 cannot capture bindings in the lambda below.
        const Index h = std::get<0>(outer), t = std::get<1>(outer), c = std::get<2>(outer);
        const std::size_t r = std::get<3>(outer);
        const int s = std::get<4>(outer);
        // kvpress asserts chunk_length > low_entropy_chunk_length >= 1; the exact flavour allows any r >= 1.
        auto rescue = rc::gen::inRange<Index>(1, eg_kvpress ? c : c + 3);
        // A fixed threshold exists only in the seeds' variant; -1 stands for "median".
        auto tau = flavour == Flavour::Exact && method == Method::EgChunkKV
                       ? rc::gen::elementOf(std::vector<double>{-1.0, -1.0, 0.25, 0.5, 0.8})
                       : rc::gen::just(-1.0);
        return rc::gen::map(
            rc::gen::tuple(rc::gen::container<std::vector<float>>(static_cast<std::size_t>(h * t), score_values(s)),
                           rescue, tau),
            [=](std::tuple<std::vector<float>, Index, double> inner) {
              ConformCase k;
              k.heads = h;
              k.tokens = t;
              k.values = std::move(std::get<0>(inner));
              k.params.method = method;
              k.params.flavour = flavour;
              k.params.ratio = parse_compression_ratio(kRatios[r], "corner_cases");
              k.params.chunk_length = c;
              k.params.rescue_size = std::get<1>(inner);
              if (std::get<2>(inner) >= 0) k.params.entropy_threshold = std::get<2>(inner);
              return k;
            });
      });
}

}  // namespace kvaudit::conform
