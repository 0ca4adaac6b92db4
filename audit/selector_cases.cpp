// Generators of ChunkKV / EG-ChunkKV cases. Values come from small pools mixed with arbitrary ones
// (weightedOneOf) so ties happen on purpose; sizes are drawn with inRange so they shrink toward the minimum.
#include "audit/selector_cases.h"

#include <cmath>
#include <cstdlib>

#include "core/io/half.h"

namespace kvaudit::audit {
namespace {

using rc::gen::just;

// A float on a 2^-20 grid in [0, scale): exact in float32, shrinks toward 0.
rc::Gen<float> gen_grid_float(float scale) {
  return rc::gen::map(rc::gen::inRange<int>(0, 1 << 20), [scale](int k) { return scale * static_cast<float>(std::ldexp(k, -20)); });
}

rc::Gen<float> gen_bf16(float scale) {
  return rc::gen::map(gen_grid_float(scale), [](float f) { return io::bf16_to_float(io::float_to_bf16(f)); });
}

// Attention-like magnitudes 2^-k: few distinct values across many decades.
rc::Gen<float> gen_power_of_two() {
  return rc::gen::map(rc::gen::inRange<int>(0, 41), [](int k) { return std::ldexp(1.0f, -k); });
}

rc::Gen<float> gen_signed(float scale) {
  return rc::gen::map(rc::gen::pair(rc::gen::arbitrary<bool>(), gen_grid_float(scale)),
                      [](std::pair<bool, float> p) { return p.first ? -p.second : p.second; });
}

// How one case draws its values. Each kind returns an element generator, possibly built from a drawn pool.
enum class ValueKind { Pool, Bf16, Grid, Signed, ZeroHeavy, PowerOfTwo };

const char* kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::Pool: return "pool";
    case ValueKind::Bf16: return "bf16";
    case ValueKind::Grid: return "grid";
    case ValueKind::Signed: return "signed";
    case ValueKind::ZeroHeavy: return "zero-heavy";
    case ValueKind::PowerOfTwo: return "power-of-two";
  }
  return "?";
}

rc::Gen<float> pool_value(bool non_negative) {
  rc::Gen<float> nice = rc::gen::element(0.0f, 1.0f, 0.5f, 0.25f, 2.0f, 0.125f, 1e-3f, 0.1f);
  if (non_negative) return rc::gen::weightedOneOf<float>({{3, nice}, {1, gen_bf16(1.0f)}});
  return rc::gen::weightedOneOf<float>({{3, nice}, {1, gen_bf16(1.0f)}, {1, rc::gen::element(-0.5f, -1.0f, -0.125f)}});
}

}  // namespace

std::vector<float> flatten(const SelectorCase& c) {
  std::vector<float> out;
  for (const auto& row : c.scores) out.insert(out.end(), row.begin(), row.end());
  return out;
}

HeadScores head_scores(const SelectorCase& c, const std::vector<float>& storage) {
  return {c.heads(), c.tokens(), {storage.data(), storage.size()}};
}

rc::Gen<CompressionRatio> gen_ratio() {
  rc::Gen<std::string> grid = rc::gen::element<std::string>("0.5", "0.1", "0.2", "0.25", "0.3", "0.4", "0.6", "0.7",
                                                           "0.75", "0.8", "0.85", "0.9", "0.95", "0.05", "0");
  // "0." followed by 1-3 random digits, e.g. "0.37", "0.905".
  rc::Gen<std::string> random_decimal = rc::gen::map(rc::gen::pair(rc::gen::inRange(1, 4), rc::gen::inRange(0, 1000)),
                                                     [](std::pair<int, int> p) {
                                                       std::string digits = std::to_string(p.second % static_cast<int>(std::pow(10, p.first)));
                                                       while (static_cast<int>(digits.size()) < p.first) digits = "0" + digits;
                                                       return "0." + digits;
                                                     });
  return rc::gen::map(rc::gen::weightedOneOf<std::string>({{3, grid}, {1, random_decimal}}), [](const std::string& text) {
    return CompressionRatio{text, std::strtod(text.c_str(), nullptr)};
  });
}

rc::Gen<Index> gen_tokens(Index chunk_length, Index max_tokens) {
  Index c = chunk_length;
  Index small_top = std::min<Index>(3 * c + 3, max_tokens);
  rc::Gen<Index> small = rc::gen::inRange<Index>(1, small_top + 1);
  // k chunks plus or minus one token: partial chunks of length 1 and c - 1, and exact multiples.
  rc::Gen<Index> boundary = rc::gen::map(rc::gen::pair(rc::gen::inRange<Index>(1, 13), rc::gen::element<Index>(0, 1, -1)),
                                         [c, max_tokens](std::pair<Index, Index> p) {
                                           return std::clamp<Index>(p.first * c + p.second, 1, max_tokens);
                                         });
  rc::Gen<Index> medium = rc::gen::inRange<Index>(1, std::min<Index>(300, max_tokens) + 1);
  if (max_tokens <= 300) return rc::gen::weightedOneOf<Index>({{4, small}, {3, boundary}, {2, medium}});
  rc::Gen<Index> large = rc::gen::inRange<Index>(301, max_tokens + 1);
  return rc::gen::weightedOneOf<Index>({{4, small}, {3, boundary}, {2, medium}, {1, large}});
}

rc::Gen<SelectorParams> gen_selector_params(const CaseOptions& o) {
  return rc::gen::exec([o] {
    SelectorParams p;
    p.method = o.method;
    p.flavour = o.flavour;
    p.ratio = *gen_ratio();
    bool kvpress_eg = o.flavour == Flavour::Kvpress && o.method == Method::EgChunkKV;
    // kvpress's EG-ChunkKV asserts c > r >= 1, so c >= 2 there; elsewhere c = 1 is allowed.
    Index min_chunk = kvpress_eg ? 2 : 1;
    p.chunk_length = *rc::gen::weightedOneOf<Index>(
        {{3, rc::gen::element<Index>(10, 20, 4, 5, 8, 16)}, {2, rc::gen::inRange<Index>(min_chunk, 9)},
         {1, rc::gen::inRange<Index>(min_chunk, 33)}});
    if (kvpress_eg) {
      p.rescue_size = *rc::gen::weightedOneOf<Index>(
          {{2, rc::gen::just(std::min<Index>(4, p.chunk_length - 1))}, {3, rc::gen::inRange<Index>(1, p.chunk_length)}});
    } else {
      p.rescue_size = *rc::gen::inRange<Index>(1, p.chunk_length + 4);  // r >= c included
    }
    if (o.flavour == Flavour::Exact && o.method == Method::EgChunkKV) {
      p.entropy_threshold = *rc::gen::weightedOneOf<std::optional<double>>(
          {{4, rc::gen::just(std::optional<double>{})},
           {1, rc::gen::just(std::optional<double>{0.0})},
           {1, rc::gen::just(std::optional<double>{1.0})},
           {1, rc::gen::map(rc::gen::inRange(0, 1001), [](int k) { return std::optional<double>{k / 1000.0}; })}});
      p.median = *rc::gen::weightedOneOf<MedianRule>({{4, just(MedianRule::Lower)}, {1, just(MedianRule::MeanOfMiddles)}});
    }
    return p;
  });
}

rc::Gen<SelectorCase> gen_selector_case(const CaseOptions& o) {
  return rc::gen::exec([o] {
    SelectorCase c;
    c.params = *gen_selector_params(o);
    Index tokens = *gen_tokens(c.params.chunk_length, o.max_tokens);
    Index heads = *rc::gen::weightedOneOf<Index>({{3, just<Index>(1)}, {2, rc::gen::inRange<Index>(1, 4)},
                                                  {1, rc::gen::inRange<Index>(1, o.max_heads + 1)}});
    ValueKind kind = *rc::gen::element(ValueKind::Pool, ValueKind::Pool, ValueKind::Bf16, ValueKind::Grid, ValueKind::Signed,
                                       ValueKind::ZeroHeavy, ValueKind::PowerOfTwo);
    if (o.non_negative && kind == ValueKind::Signed) kind = ValueKind::Grid;
    c.kind = kind_name(kind);
    rc::Gen<float> element = gen_grid_float(1.0f);
    switch (kind) {
      case ValueKind::Pool: {
        // 1-4 distinct values: shrinking the pool shrinks the number of distinct values.
        auto pool = *rc::gen::unique<std::vector<float>>(pool_value(o.non_negative)).as("value pool");
        if (pool.empty()) pool.push_back(0.0f);
        if (pool.size() > 4) pool.resize(4);
        element = rc::gen::elementOf(pool);
        break;
      }
      case ValueKind::Bf16: element = gen_bf16(*rc::gen::element(1.0f, 100.0f, 1e-3f)); break;
      case ValueKind::Grid: break;
      case ValueKind::Signed: element = gen_signed(1.0f); break;
      case ValueKind::ZeroHeavy: element = rc::gen::weightedOneOf<float>({{4, just(0.0f)}, {1, gen_bf16(1.0f)}}); break;
      case ValueKind::PowerOfTwo: element = gen_power_of_two(); break;
    }
    c.scores = *rc::gen::container<std::vector<std::vector<float>>>(
        static_cast<std::size_t>(heads), rc::gen::container<std::vector<float>>(static_cast<std::size_t>(tokens), element));
    // Sometimes zero whole chunks in every head (an all-zero chunk has entropy 0 and mean 0).
    if (*rc::gen::weightedOneOf<bool>({{3, just(false)}, {1, just(true)}})) {
      Index n_chunks = (tokens + c.params.chunk_length - 1) / c.params.chunk_length;
      auto zero = *rc::gen::container<std::vector<bool>>(static_cast<std::size_t>(n_chunks),
                                                         rc::gen::weightedOneOf<bool>({{2, just(false)}, {1, just(true)}}));
      for (Index i = 0; i < n_chunks; ++i)
        if (zero[static_cast<std::size_t>(i)])
          for (auto& row : c.scores)
            for (Index j = i * c.params.chunk_length; j < std::min(tokens, (i + 1) * c.params.chunk_length); ++j)
              row[static_cast<std::size_t>(j)] = 0.0f;
      c.kind += "+zero-chunks";
    }
    return c;
  });
}

void showValue(const SelectorCase& c, std::ostream& os) {
  const SelectorParams& p = c.params;
  os << "SelectorCase{method=" << method_name(p.method)
     << " flavour=" << (p.flavour == Flavour::Kvpress ? "kvpress" : "exact") << " rho=\"" << p.ratio.text << "\" c=" << p.chunk_length
     << " r=" << p.rescue_size << " tau=" << (p.entropy_threshold ? std::to_string(*p.entropy_threshold) : "median")
     << " median=" << (p.median == MedianRule::Lower ? "lower" : "mean-of-middles") << " kind=" << c.kind << " heads=" << c.heads()
     << " T=" << c.tokens() << " scores=[";
  for (const auto& row : c.scores) {
    os << "[";
    for (std::size_t j = 0; j < row.size(); ++j) os << (j ? "," : "") << row[j];
    os << "]";
  }
  os << "]}";
}

}  // namespace kvaudit::audit
