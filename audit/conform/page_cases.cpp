// Page-EntroKV conform cases: the weighted generator, real dump rows, and the concrete shrinker.
#include <algorithm>
#include <cmath>
#include <tuple>

#include "audit/conform/page_family.h"
#include "core/io/dump.h"
#include "oracle/page_params.h"

namespace kvaudit::conform {

namespace paging = oracle::paging;

namespace {

// "0.5" first: shrinking moves toward it. Dyadic (0.5, 0.75, 0.875, 0.375) and decimal ratios where
// floor((1 - rho) T) is easy to get wrong in floating point (0.9, 0.8, 0.7, 0.95, 0.85).
const std::vector<std::string> kRatios = {"0.5", "0.8", "0.9", "0.75", "0.7", "0.95", "0.875", "0.25",
                                          "0.375", "0.1", "0.85", "0.6", "0.99", "0"};

// Integer weights of one head's row, by style. The row is weights / sum in float32, so equal weights stay
// equal values (ties survive), and one-hot / sink-only rows are exact.
rc::Gen<std::vector<int>> row_weights(int style, Index T, Index sinks) {
  const auto n = static_cast<std::size_t>(T);
  switch (style) {
    case 0:  // heavy ties
      return rc::gen::container<std::vector<int>>(n, rc::gen::elementOf(std::vector<int>{0, 1, 1, 2}));
    case 1:  // one-hot at a random position
      return rc::gen::map(rc::gen::inRange<Index>(0, T), [n](Index at) {
        std::vector<int> w(n, 0);
        w[static_cast<std::size_t>(at)] = 1;
        return w;
      });
    case 2:  // sink-dominated: most of the mass on the first positions
      return rc::gen::map(rc::gen::container<std::vector<int>>(n, rc::gen::inRange(0, 4)), [sinks](std::vector<int> w) {
        for (std::size_t t = 0; t < w.size() && static_cast<Index>(t) < std::max<Index>(sinks, 1); ++t) w[t] += 200;
        return w;
      });
    case 3:  // spiky: flat with a few large values (a retrieval head)
      return rc::gen::container<std::vector<int>>(
          n, rc::gen::weightedOneOf<int>({{8, rc::gen::elementOf(std::vector<int>{0, 1})}, {1, rc::gen::inRange(30, 300)}}));
    case 4:  // no mass beyond the sinks: p~ does not exist
      return rc::gen::map(rc::gen::container<std::vector<int>>(n, rc::gen::inRange(1, 5)), [sinks](std::vector<int> w) {
        for (std::size_t t = static_cast<std::size_t>(std::max<Index>(sinks, 1)); t < w.size(); ++t) w[t] = 0;
        return w;
      });
    default:  // distinct-ish
      return rc::gen::container<std::vector<int>>(n, rc::gen::inRange(0, 1000));
  }
}

std::vector<float> normalized(const std::vector<int>& w) {
  double total = 0;
  for (int v : w) total += v;
  std::vector<float> out(w.size(), 0.0f);
  if (total == 0) {
    out[0] = 1.0f;  // a row must be a distribution
    return out;
  }
  for (std::size_t t = 0; t < w.size(); ++t) out[t] = static_cast<float>(w[t] / total);
  return out;
}

// Renormalize each row in place; false if a row has no mass left.
bool renormalize(PageCase& c) {
  for (Index h = 0; h < c.q_heads; ++h) {
    double total = 0;
    for (Index t = 0; t < c.tokens; ++t) total += c.values[static_cast<std::size_t>(h * c.tokens + t)];
    if (total <= 0) return false;
    for (Index t = 0; t < c.tokens; ++t) {
      float& v = c.values[static_cast<std::size_t>(h * c.tokens + t)];
      v = static_cast<float>(v / total);
    }
  }
  return true;
}

PageCase with_tokens(const PageCase& c, Index begin, Index end) {
  PageCase out = c;
  out.tokens = end - begin;
  out.values.clear();
  for (Index h = 0; h < c.q_heads; ++h) {
    auto row = c.values.begin() + h * c.tokens;
    out.values.insert(out.values.end(), row + begin, row + end);
  }
  return out;
}

PageCase with_heads(const PageCase& c, const std::vector<Index>& heads, Index group_size) {
  PageCase out = c;
  out.q_heads = static_cast<Index>(heads.size());
  out.params.group_size = group_size;
  out.values.clear();
  for (Index h : heads) {
    auto row = c.values.begin() + h * c.tokens;
    out.values.insert(out.values.end(), row, row + c.tokens);
  }
  return out;
}

std::size_t distinct_values(const PageCase& c) {
  std::vector<float> v = c.values;
  std::sort(v.begin(), v.end());
  return static_cast<std::size_t>(std::unique(v.begin(), v.end()) - v.begin());
}

std::vector<PageCase> candidates(const PageCase& c) {
  std::vector<PageCase> out;
  const auto& p = c.params;
  const Index G = p.group_size, groups = c.groups();
  auto add = [&](PageCase k, bool renorm) {
    if (k.tokens < 1 || k.q_heads < 1) return;
    if (renorm && !renormalize(k)) return;
    k.origin = c.origin + (c.origin.find(" (shrunk)") == std::string::npos ? " (shrunk)" : "");
    out.push_back(std::move(k));
  };
  for (Index g = 0; groups > 1 && g < groups; ++g) {  // drop one KV group
    std::vector<Index> heads;
    for (Index h = 0; h < c.q_heads; ++h)
      if (h / G != g) heads.push_back(h);
    add(with_heads(c, heads, G), false);
  }
  for (Index i = 0; G > 1 && i < G; ++i) {  // drop head i of every group
    std::vector<Index> heads;
    for (Index h = 0; h < c.q_heads; ++h)
      if (h % G != i) heads.push_back(h);
    add(with_heads(c, heads, G - 1), false);
  }
  // Prefixes, including round lengths (multiples of 5 and 8): decimal ratios make (1 - rho) T an integer, where the
  // exact and the float budgets part, only at such lengths, and a failure that needs it survives no other cut.
  for (Index keep : {c.tokens / 4, c.tokens / 2, c.tokens - p.page_size, c.tokens - 1, c.tokens / 2 / 5 * 5, c.tokens / 4 / 5 * 5,
                     c.tokens / 2 / 8 * 8})
    if (keep >= 1 && keep < c.tokens) add(with_tokens(c, 0, keep), true);
  // Remove one whole page (not the first: the sink pages stay where they are).
  const Index full_pages = c.tokens / p.page_size;
  for (Index k = 1; k < full_pages && k < 64 && c.tokens > p.page_size; ++k) {
    PageCase m = with_tokens(c, 0, c.tokens - p.page_size);
    for (Index h = 0; h < c.q_heads; ++h) {
      auto src = c.values.begin() + h * c.tokens;
      auto dst = m.values.begin() + h * m.tokens;
      std::copy(src, src + k * p.page_size, dst);
      std::copy(src + (k + 1) * p.page_size, src + c.tokens, dst + k * p.page_size);
    }
    add(std::move(m), true);
  }
  // Every page cut to its first half (P halved, the partial last page halved too, rows renormalized): the page
  // count, and so the walk's shape, is kept while T halves. A prefix changes the page count instead.
  if (p.page_size >= 2) {
    const Index P = p.page_size, half = P / 2, whole = c.tokens / P, tail = c.tokens - whole * P;
    const Index tail_kept = tail == 0 ? 0 : std::max<Index>(1, std::min<Index>((tail + 1) / 2, half > 1 ? half - 1 : 1));
    PageCase m = c;
    m.tokens = whole * half + tail_kept;
    m.params.page_size = half;
    m.values.clear();
    for (Index h = 0; h < c.q_heads; ++h) {
      auto row = c.values.begin() + h * c.tokens;
      for (Index i = 0; i < whole; ++i) m.values.insert(m.values.end(), row + i * P, row + i * P + half);
      m.values.insert(m.values.end(), row + whole * P, row + whole * P + tail_kept);
    }
    if (m.tokens >= 1 && m.tokens < c.tokens) add(std::move(m), true);
  }
  // Fewer distinct values: each row's values mapped onto a few levels of its maximum.
  for (int levels : {1, 2, 4, 16}) {
    PageCase m = c;
    for (Index h = 0; h < c.q_heads; ++h) {
      float top = 0;
      for (Index t = 0; t < c.tokens; ++t) top = std::max(top, c.values[static_cast<std::size_t>(h * c.tokens + t)]);
      if (top == 0) continue;
      for (Index t = 0; t < c.tokens; ++t) {
        float& v = m.values[static_cast<std::size_t>(h * c.tokens + t)];
        v = std::round(v / top * static_cast<float>(levels));
      }
    }
    if (renormalize(m) && distinct_values(m) < distinct_values(c)) add(std::move(m), false);
  }
  for (Index P : {Index{1}, p.page_size / 2, p.page_size - 1}) {
    if (P >= 1 && P < p.page_size) {
      PageCase m = c;
      m.params.page_size = P;
      add(std::move(m), false);
    }
  }
  for (Index s : {Index{0}, p.n_sink / 2, p.n_sink - 1}) {
    if (s >= 0 && s < p.n_sink) {
      PageCase m = c;
      m.params.n_sink = s;
      add(std::move(m), false);
    }
  }
  if (p.ratio_text != "0.5") {
    PageCase m = c;
    m.params.ratio_text = "0.5";
    add(std::move(m), false);
  }
  return out;
}

}  // namespace

rc::Gen<PageCase> page_cases(Index max_size) {
  const Index cap = max_size > 0 ? max_size : 256;
  // T in [1, cap], most draws small: one monotone map of one range, so T shrinks all the way to 1.
  auto tokens = rc::gen::map(rc::gen::inRange<Index>(0, 200), [cap](Index u) {
    const Index t = u < 120 ? 1 + u / 2 : 61 + (u - 120) * 5 / 2;
    return std::min(t, cap);
  });
  auto group_size = rc::gen::weightedOneOf<Index>({{3, rc::gen::inRange<Index>(1, 5)}, {1, rc::gen::inRange<Index>(5, 9)}});
  auto groups = rc::gen::inRange<Index>(1, 4);
  auto page = rc::gen::weightedOneOf<int>({{4, rc::gen::inRange(1, 9)}, {2, rc::gen::just(16)}, {1, rc::gen::just(-1)}});
  auto sinks = rc::gen::weightedOneOf<Index>({{4, rc::gen::just<Index>(4)}, {2, rc::gen::inRange<Index>(0, 9)}});
  auto ratio = rc::gen::inRange<std::size_t>(0, kRatios.size());
  // pooling, page score, source, sink pages, greedy: the defaults most of the time.
  auto knobs = rc::gen::container<std::vector<int>>(5, rc::gen::weightedOneOf<int>({{3, rc::gen::just(0)}, {1, rc::gen::just(1)}}));
  return rc::gen::mapcat(
      rc::gen::tuple(tokens, group_size, groups, page, sinks, ratio, knobs),
      [](std::tuple<Index, Index, Index, int, Index, std::size_t, std::vector<int>> o) {
        const Index T = std::get<0>(o), G = std::get<1>(o), groups = std::get<2>(o);
        const int page_draw = std::get<3>(o);
        const Index sinks = std::get<4>(o);
        const std::size_t r = std::get<5>(o);
        const std::vector<int> knob = std::get<6>(o);
        const Index heads = G * groups;
        // Per head: a style, then its weights. Mixed styles inside a group make the head weights decide.
        auto styles = rc::gen::container<std::vector<int>>(static_cast<std::size_t>(heads), rc::gen::inRange(0, 6));
        return rc::gen::mapcat(styles, [=](std::vector<int> st) {
          std::vector<rc::Gen<std::vector<int>>> rows;
          for (int s : st) rows.push_back(row_weights(s, T, sinks));
          // The Gen of all rows, built head by head (shrinks stay per row).
          rc::Gen<std::vector<std::vector<int>>> all = rc::gen::just(std::vector<std::vector<int>>{});
          for (auto& g : rows) {
            all = rc::gen::mapcat(all, [g](std::vector<std::vector<int>> acc) {
              return rc::gen::map(g, [acc](std::vector<int> w) {
                auto out = acc;
                out.push_back(std::move(w));
                return out;
              });
            });
          }
          return rc::gen::map(all, [=](const std::vector<std::vector<int>>& weights) {
            PageCase c;
            c.q_heads = heads;
            c.tokens = T;
            for (const auto& w : weights) {
              auto row = normalized(w);
              c.values.insert(c.values.end(), row.begin(), row.end());
            }
            auto& p = c.params;
            p.group_size = G;
            p.page_size = page_draw > 0 ? page_draw : T + 3;  // -1: one page holds everything (P >= T)
            p.n_sink = sinks;
            p.ratio_text = kRatios[r];
            p.pooling = knob[0] ? kvaudit::PagePooling::Mean : kvaudit::PagePooling::Entropy;
            p.page_score = knob[1] ? kvaudit::PageScore::Max : kvaudit::PageScore::Sum;
            p.source = knob[2] ? kvaudit::PoolSource::Raw : kvaudit::PoolSource::SinkIsolated;
            p.sink_pages = knob[3] ? kvaudit::SinkPages::Scored : kvaudit::SinkPages::Reserved;
            p.greedy = knob[4] ? kvaudit::GreedyRule::StopAtFirstMisfit : kvaudit::GreedyRule::SkipMisfits;
            return c;
          });
        });
      });
}

std::vector<PageCase> page_dump_cases(const std::string& dir, Index max_size) {
  std::vector<PageCase> out;
  for (const auto& prompt : io::load_dumps(dir)) {
    const ScoreTensor attn = prompt.scores("attention.window_mean");
    const Index G = prompt.kv_heads > 0 ? attn.heads / prompt.kv_heads : 1;
    for (Index layer = 0; layer < attn.layers; ++layer) {
      for (const char* ratio : {"0.5", "0.8", "0.9"}) {
        PageCase c;
        c.q_heads = attn.heads;
        c.tokens = attn.tokens;
        for (Index h = 0; h < attn.heads; ++h) {
          auto row = attn.row(layer, h);
          c.values.insert(c.values.end(), row.begin(), row.end());
        }
        c.params.group_size = G;
        c.params.ratio_text = ratio;
        c.origin = "dump " + prompt.name + " layer " + std::to_string(layer) + " ratio " + ratio;
        if (max_size > 0 && c.tokens > max_size) {
          c = with_tokens(c, 0, max_size);
          if (!renormalize(c)) continue;
        }
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

rc::Shrinkable<PageCase> shrinkable_page_case(PageCase c) {
  return rc::shrinkable::shrinkRecur(std::move(c), [](const PageCase& v) { return rc::seq::fromContainer(candidates(v)); });
}

}  // namespace kvaudit::conform
