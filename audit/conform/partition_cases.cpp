// Partition conform cases: the weighted generator, bucketed real attention rows, and the concrete shrinker.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "audit/conform/partition_family.h"
#include "core/io/dump.h"
#include "core/pooling/bucket_masses.h"
#include "oracle/partition_arith.h"
#include "oracle/partition_exact.h"

namespace kvaudit::conform {

namespace {

// Integer weights by style; p = w / sum in double (dyadic rows are exact).
rc::Gen<std::vector<double>> row(int style, Index n) {
  const auto len = static_cast<std::size_t>(n);
  auto normalize = [](std::vector<int> w) {
    double total = 0;
    for (int v : w) total += v;
    std::vector<double> p(w.size(), 0.0);
    if (total == 0) {
      p[0] = 1.0;
      return p;
    }
    for (std::size_t i = 0; i < w.size(); ++i) p[i] = w[i] / total;
    return p;
  };
  switch (style) {
    case 0:  // heavy ties
      return rc::gen::map(rc::gen::container<std::vector<int>>(len, rc::gen::elementOf(std::vector<int>{0, 1, 1, 2})), normalize);
    case 1:  // dyadic: binary splits of 1, every mass a power of two (sums exact, entropies rational)
      return rc::gen::map(rc::gen::container<std::vector<int>>(len, rc::gen::inRange(0, 4)), [len](std::vector<int> exps) {
        // masses 2^-e, then the last one adjusted so the total is exactly 1 when possible
        std::vector<double> p(len);
        double total = 0;
        for (std::size_t i = 0; i < len; ++i) total += p[i] = std::ldexp(1.0, -exps[i]);
        for (auto& v : p) v /= std::exp2(std::ceil(std::log2(total)));  // a power of two: exact
        return p;
      });
    case 2:  // one dominant mass
      return rc::gen::map(rc::gen::tuple(rc::gen::inRange<Index>(0, n), rc::gen::container<std::vector<int>>(len, rc::gen::inRange(0, 4))),
                          [normalize](std::tuple<Index, std::vector<int>> t) {
                            auto w = std::get<1>(t);
                            w[static_cast<std::size_t>(std::get<0>(t))] += 1000;
                            return normalize(w);
                          });
    case 3:  // zeros
      return rc::gen::map(rc::gen::container<std::vector<int>>(
                              len, rc::gen::weightedOneOf<int>({{1, rc::gen::just(0)}, {1, rc::gen::inRange(1, 11)}})),
                          normalize);
    case 4:  // uniform
      return rc::gen::just(std::vector<double>(len, 1.0 / static_cast<double>(n)));
    default:  // distinct-ish
      return rc::gen::map(rc::gen::container<std::vector<int>>(len, rc::gen::inRange(1, 1000)), normalize);
  }
}

// The budget from its style: fractions of [H_min, H_max] of m groups (free form: [0, H(singletons)]), the
// exact entropy of a random partition (H = R exactly when its masses are powers of two), 0, or just below
// the minimum (infeasible).
double budget(const std::vector<double>& p, std::optional<Index> m, int style, unsigned pick) {
  const Index n = static_cast<Index>(p.size());
  double lo = 0, hi = 0;
  if (m) {
    const auto e = oracle::entropy_extremes(p, *m);
    lo = e.min_bits, hi = e.max_bits;
  } else {
    for (double v : p) hi += oracle::h_bits(v);
  }
  switch (style) {
    case 0: case 1: case 2: {
      static const double f[] = {0.5, 0.25, 0.75};
      return lo + f[style] * (hi - lo);
    }
    case 3: {  // the entropy of a partition drawn from `pick`
      std::vector<Index> cuts;
      const Index groups = m ? *m : 1 + static_cast<Index>(pick % static_cast<unsigned>(n));
      for (Index b = 1; b < n && static_cast<Index>(cuts.size()) < groups - 1; ++b) {
        const Index need = groups - 1 - static_cast<Index>(cuts.size()), left = n - b;
        if (left <= need || ((pick >> (b % 31)) & 1u)) cuts.push_back(b);
      }
      return oracle::ExactPrefix(p).entropy_extended(oracle::full_bounds(cuts, n));
    }
    case 4: return 0.0;
    case 5: return hi + 0.5;
    default: return lo > 0 ? std::nextafter(lo, -1.0) * 0.99 : -0.25;  // infeasible
  }
}

PartitionCase renormalized(PartitionCase c) {
  double total = 0;
  for (double v : c.p) total += v;
  if (total > 0)
    for (double& v : c.p) v /= total;
  return c;
}

std::size_t distinct(const std::vector<double>& p) {
  std::vector<double> v = p;
  std::sort(v.begin(), v.end());
  return static_cast<std::size_t>(std::unique(v.begin(), v.end()) - v.begin());
}

std::vector<PartitionCase> candidates(const PartitionCase& c) {
  std::vector<PartitionCase> out;
  const Index n = static_cast<Index>(c.p.size());
  auto add = [&](PartitionCase k) {
    if (k.p.empty()) return;
    double total = 0;
    for (double v : k.p) total += v;
    if (!(total > 0)) return;
    if (k.groups) k.groups = std::min<Index>(*k.groups, static_cast<Index>(k.p.size()));
    k.origin = c.origin + (c.origin.find(" (shrunk)") == std::string::npos ? " (shrunk)" : "");
    out.push_back(std::move(k));
  };
  for (Index keep : {n / 2, n - 1}) {
    if (keep >= 1 && keep < n) {
      PartitionCase k = c;
      k.p.resize(static_cast<std::size_t>(keep));
      add(renormalized(std::move(k)));
    }
  }
  for (Index i = 0; i + 1 < n && i < 64; ++i) {  // merge masses i and i+1 (the total is unchanged)
    PartitionCase k = c;
    k.p[i] += k.p[i + 1];
    k.p.erase(k.p.begin() + i + 1);
    add(std::move(k));
  }
  for (Index i = 0; n > 1 && i < n && i < 64; ++i) {  // drop mass i
    PartitionCase k = c;
    k.p.erase(k.p.begin() + i);
    add(renormalized(std::move(k)));
  }
  if (c.groups && *c.groups > 1) {
    PartitionCase k = c;
    k.groups = *c.groups - 1;
    add(std::move(k));
  }
  for (double step : {1.0, 0.5, 0.25}) {  // a rounder budget
    const double r = std::round(c.budget_bits / step) * step;
    if (r != c.budget_bits && std::fabs(r) <= std::fabs(c.budget_bits) + step) {
      PartitionCase k = c;
      k.budget_bits = r;
      add(std::move(k));
      break;
    }
  }
  for (int levels : {1, 2, 4}) {  // fewer distinct masses
    PartitionCase k = c;
    double top = *std::max_element(c.p.begin(), c.p.end());
    if (top <= 0) break;
    for (double& v : k.p) v = std::round(v / top * levels);
    k = renormalized(std::move(k));
    if (distinct(k.p) < distinct(c.p)) add(std::move(k));
  }
  return out;
}

}  // namespace

rc::Gen<PartitionCase> partition_cases(Index max_size) {
  const Index cap = max_size > 0 ? max_size : 24;
  auto n = rc::gen::map(rc::gen::inRange<Index>(0, 100), [cap](Index u) { return std::min<Index>(cap, 1 + u * 24 / 100); });
  auto style = rc::gen::inRange(0, 6);
  auto groups = rc::gen::weightedOneOf<Index>({{3, rc::gen::inRange<Index>(1, 9)}, {1, rc::gen::just<Index>(0)}});
  auto rstyle = rc::gen::inRange(0, 7);
  auto pick = rc::gen::arbitrary<unsigned>();
  return rc::gen::mapcat(rc::gen::tuple(n, style, groups, rstyle, pick), [](std::tuple<Index, int, Index, int, unsigned> t) {
    const Index len = std::get<0>(t);
    const Index m = std::get<2>(t);
    const int rs = std::get<3>(t);
    const unsigned pk = std::get<4>(t);
    return rc::gen::map(row(std::get<1>(t), len), [=](std::vector<double> p) {
      PartitionCase c;
      c.p = std::move(p);
      if (m > 0) c.groups = std::min<Index>(m, len);
      c.budget_bits = budget(c.p, c.groups, rs, pk);
      return c;
    });
  });
}

std::vector<PartitionCase> partition_dump_cases(const std::string& dir, Index max_size) {
  const Index buckets = max_size > 0 ? std::min<Index>(32, max_size) : 32;
  std::vector<PartitionCase> out;
  for (const auto& prompt : io::load_dumps(dir)) {
    const ScoreTensor attn = prompt.scores("attention.last_query");
    for (Index layer = 0; layer < attn.layers; layer += 5) {
      for (Index h = 0; h < attn.heads; h += 4) {
        const std::vector<double> p = pooling::bucket_masses(attn.row(layer, h), buckets);
        const std::string where = "dump " + prompt.name + " layer " + std::to_string(layer) + " head " + std::to_string(h);
        const Index m = std::min<Index>(8, buckets);
        const auto e = oracle::entropy_extremes(p, m);
        out.push_back({p, e.min_bits + 0.75 * (e.max_bits - e.min_bits), m, where + " m " + std::to_string(m)});
        out.push_back({p, 0.5 * std::log2(static_cast<double>(buckets)), std::nullopt, where + " free form"});
      }
    }
  }
  return out;
}

rc::Shrinkable<PartitionCase> shrinkable_partition_case(PartitionCase c) {
  return rc::shrinkable::shrinkRecur(std::move(c), [](const PartitionCase& v) { return rc::seq::fromContainer(candidates(v)); });
}

}  // namespace kvaudit::conform
