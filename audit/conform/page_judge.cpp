// The Page-EntroKV conform checker: double page scores with a derived error bound, the oracle's admissibility
// (oracle::paging::check_pages_admissible) on them, the oracle's page accounting, and naming of mistakes.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "audit/conform/page_family.h"
#include "oracle/page_entrokv.h"

namespace kvaudit::conform {

namespace paging = oracle::paging;

namespace {

double gamma_of(double n, double u) {
  const double nu = n * u;
  return nu < 0.5 ? nu / (1.0 - nu) : 1.0;  // beyond 1/2 every pair of pages counts as tied
}

void validate(const PageCase& c) {
  const auto& p = c.params;
  if (c.tokens < 1 || c.q_heads < 1) throw std::invalid_argument("attention must have at least one head and one token");
  if (static_cast<Index>(c.values.size()) != c.q_heads * c.tokens) throw std::invalid_argument("attention shape");
  if (p.group_size < 1 || c.q_heads % p.group_size != 0)
    throw std::invalid_argument("q_heads " + std::to_string(c.q_heads) + " is not a multiple of group_size " +
                                std::to_string(p.group_size));
  if (p.page_size < 1) throw std::invalid_argument("page_size must be >= 1");
  if (p.n_sink < 0) throw std::invalid_argument("sinks must be >= 0");
  for (float v : c.values)
    if (!(v >= 0.0f) || !std::isfinite(v)) throw std::invalid_argument("attention values must be finite and >= 0");
}

// The walk of oracle::paging::select_pages on double scores: reserved pages by index, then (score desc,
// index asc). Kept pages in increasing order.
std::vector<Index> walk(const std::vector<double>& scores, const std::vector<paging::Page>& pages,
                        const std::vector<bool>& reserved, Index budget, paging::GreedyRule rule) {
  std::vector<Index> order(scores.size());
  std::iota(order.begin(), order.end(), Index{0});
  std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) {
    if (reserved[a] != reserved[b]) return static_cast<bool>(reserved[a]);
    if (reserved[a]) return a < b;
    if (scores[a] != scores[b]) return scores[a] > scores[b];
    return a < b;
  });
  std::vector<Index> kept;
  Index retained = 0;
  for (Index k : order) {
    if (retained + pages[k].size() <= budget) {
      kept.push_back(k);
      retained += pages[k].size();
    } else if (rule == paging::GreedyRule::StopAtFirstMisfit) {
      break;
    }
  }
  std::sort(kept.begin(), kept.end());
  return kept;
}

struct Layout {
  std::vector<paging::Page> pages;
  std::vector<bool> reserved;
  Index budget = 0;
};

Layout layout_of(const PageCase& c, const paging::PageParams& p) {
  Layout l;
  l.pages = paging::page_layout(c.tokens, p.page_size);
  l.reserved = paging::reserved_pages(l.pages, p.n_sink, p.sink_pages);
  l.budget = paging::page_token_budget(c.tokens, p.ratio_text);
  return l;
}

// Is `claimed` admissible for group g under `p`? Fast path: the double walk's own canonical answer is
// admissible by construction (its order is one order of the tie classes built from the same scores), so
// only other answers go through the oracle's check.
Verdict group_admissible(const PageCase& c, Index g, const paging::PageParams& p, const Layout& l,
                         const std::vector<Index>& claimed, bool raw_weights = false) {
  const std::vector<double> s = page_scores_double(c, g, p, raw_weights);
  if (walk(s, l.pages, l.reserved, l.budget, p.greedy) == claimed) return Verdict::conforms();
  std::vector<paging::Exact> exact(s.begin(), s.end());
  const double tol = page_impl_tolerance(c.tokens, p.group_size, p.page_size) +
                     3.0 * page_judge_error_bound(c.tokens, p.group_size, p.page_size);
  return paging::check_pages_admissible(exact, l.pages, l.reserved, l.budget, p.greedy, claimed, paging::Exact(tol));
}

// A tie-order (or reserved) violation, named after the mistake whose pages the answer is (if any).
Verdict name_mistake(const PageCase& c, Index g, const Layout& l, const std::vector<Index>& claimed, Verdict v) {
  const auto& p = c.params;
  struct Alternative {
    paging::PageParams params;
    bool raw_weights;
    const char* rule;
    std::string what;
  };
  std::vector<Alternative> alternatives;
  auto with = [&](auto change) {
    paging::PageParams q = p;
    change(q);
    return q;
  };
  const bool entropy = p.pooling == paging::Pooling::Entropy;
  alternatives.push_back({with([&](auto& q) { q.pooling = entropy ? paging::Pooling::Mean : paging::Pooling::Entropy; }),
                          false, "weights", entropy ? "mean pooling (w = 1/G)" : "entropy pooling"});
  if (entropy)
    alternatives.push_back({p, true, "sink-isolation", "entropy weights computed on the raw rows (sinks not isolated)"});
  const bool isolated = p.source == paging::PoolSource::SinkIsolated;
  alternatives.push_back({with([&](auto& q) { q.source = isolated ? paging::PoolSource::Raw : paging::PoolSource::SinkIsolated; }),
                          false, "sink-isolation", isolated ? "pooling the raw rows" : "pooling the sink-isolated rows"});
  const bool sum = p.page_score == paging::PageScore::Sum;
  alternatives.push_back({with([&](auto& q) { q.page_score = sum ? paging::PageScore::Max : paging::PageScore::Sum; }),
                          false, "page-score", sum ? "max page scores" : "sum page scores"});
  const bool skip = p.greedy == paging::GreedyRule::SkipMisfits;
  alternatives.push_back({with([&](auto& q) { q.greedy = skip ? paging::GreedyRule::StopAtFirstMisfit : paging::GreedyRule::SkipMisfits; }),
                          false, "walk", skip ? "stopping at the first misfit" : "skipping misfits"});
  // Every mistake that explains the pages is listed; the rule is the first one's (small cases can fit several).
  std::string rule, explained;
  auto found = [&](const char* r, const std::string& what) {
    if (rule.empty()) rule = r;
    explained += (explained.empty() ? "" : ", or ") + what;
  };
  // kvpress-style float budget int(T (1 - rho)) in double, where the exact decimal budget is required.
  Layout f = l;
  f.budget = std::max<Index>(1, static_cast<Index>(static_cast<double>(c.tokens) * (1.0 - std::stod(p.ratio_text))));
  if (f.budget != l.budget && group_admissible(c, g, p, f, claimed).passed())
    found("budget", "the float budget int(T (1 - rho)) = " + std::to_string(f.budget) + " (exact budget " +
                        std::to_string(l.budget) + ")");
  for (const auto& a : alternatives)
    if (group_admissible(c, g, a.params, l, claimed, a.raw_weights).passed()) found(a.rule, a.what);
  if (rule.empty()) return v;
  return Verdict::violates(rule, v.message + "; the pages are what " + explained + " keeps");
}

std::string list_text(const std::vector<Index>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

double page_judge_error_bound(Index tokens, Index group_size, Index page_size) {
  return gamma_of(7.0 * static_cast<double>(tokens) + 2.0 * static_cast<double>(group_size) +
                      static_cast<double>(page_size) + 16.0,
                  std::ldexp(1.0, -53));
}

double page_impl_tolerance(Index tokens, Index group_size, Index page_size) {
  return gamma_of(7.0 * static_cast<double>(tokens) + 2.0 * static_cast<double>(group_size) +
                      static_cast<double>(page_size) + 32.0,
                  std::ldexp(1.0, -24));
}

std::vector<double> page_scores_double(const PageCase& c, Index group, const paging::PageParams& p, bool raw_weights) {
  const Index T = c.tokens, G = p.group_size;
  std::vector<std::vector<double>> isolated(static_cast<std::size_t>(G));
  std::vector<double> collision(static_cast<std::size_t>(G), 0.0);
  double total = 0.0;
  for (Index i = 0; i < G; ++i) {
    const auto row = c.row(group * G + i);
    double z = 0.0;
    for (Index t = p.n_sink; t < T; ++t) z += row[t];
    auto& q = isolated[i];
    if (z > 0.0) {  // p~ exists (a double sum of non-negative floats is 0 only if every term is)
      q.assign(static_cast<std::size_t>(T), 0.0);
      for (Index t = p.n_sink; t < T; ++t) q[t] = row[t] / z;
    }
    double ci = 0.0;
    if (raw_weights) {
      for (Index t = 0; t < T; ++t) ci += static_cast<double>(row[t]) * row[t];
    } else {
      for (double v : q) ci += v * v;
    }
    collision[i] = ci;
    total += ci;
  }
  std::vector<double> w(static_cast<std::size_t>(G), 1.0 / static_cast<double>(G));
  if (p.pooling == paging::Pooling::Entropy && total > 0.0)
    for (Index i = 0; i < G; ++i) w[i] = collision[i] / total;
  std::vector<double> s(static_cast<std::size_t>(T), 0.0);
  for (Index i = 0; i < G; ++i) {
    if (p.source == paging::PoolSource::Raw) {
      const auto row = c.row(group * G + i);
      for (Index t = 0; t < T; ++t) s[t] += w[i] * row[t];
    } else if (!isolated[i].empty()) {
      for (Index t = 0; t < T; ++t) s[t] += w[i] * isolated[i][t];
    }
  }
  std::vector<double> pages;
  for (Index b = 0; b < T; b += p.page_size) {
    const Index e = std::min(b + p.page_size, T);
    double v = s[b];
    for (Index t = b + 1; t < e; ++t) v = p.page_score == paging::PageScore::Sum ? v + s[t] : std::max(v, s[t]);
    pages.push_back(v);
  }
  return pages;
}

Verdict judge_pages(const PageCase& c, const PageAnswer& a) {
  validate(c);
  const auto& p = c.params;
  const Layout l = layout_of(c, p);  // throws std::invalid_argument for a bad ratio
  const Index groups = c.groups(), n = static_cast<Index>(l.pages.size());
  // Stage 1: shape, range, order.
  if (static_cast<Index>(a.kept_pages.size()) != groups)
    return Verdict::violates("shape", "expected one kept_pages list per KV group (" + std::to_string(groups) +
                                          " = " + std::to_string(c.q_heads) + " heads / G " + std::to_string(p.group_size) +
                                          "), got " + std::to_string(a.kept_pages.size()));
  for (Index g = 0; g < groups; ++g) {
    const auto& k = a.kept_pages[g];
    for (std::size_t i = 0; i < k.size(); ++i) {
      if (k[i] < 0 || k[i] >= n)
        return Verdict::violates("range", "group " + std::to_string(g) + ": page " + std::to_string(k[i]) +
                                              " outside [0, " + std::to_string(n) + ")");
      if (i > 0 && k[i] <= k[i - 1])
        return Verdict::violates("order", "group " + std::to_string(g) + ": kept pages " + list_text(k) +
                                              " are not strictly increasing");
    }
  }
  // Stage 2: the ledger, when the answer also states its token sets.
  if (a.kept_tokens) {
    if (static_cast<Index>(a.kept_tokens->size()) != groups)
      return Verdict::violates("token-set", "expected one kept_tokens list per KV group, got " +
                                                std::to_string(a.kept_tokens->size()));
    paging::PageLedger ledger{1, groups, n, std::vector<std::uint8_t>(static_cast<std::size_t>(groups * n), 0)};
    for (Index g = 0; g < groups; ++g)
      for (Index k : a.kept_pages[g]) ledger.kept[static_cast<std::size_t>(g * n + k)] = 1;
    std::vector<Positions> sets(a.kept_tokens->begin(), a.kept_tokens->end());
    for (auto& s : sets) std::sort(s.begin(), s.end());  // order of token sets is not a rule; duplicates are
    Verdict v = paging::check_page_accounting(ledger, sets, c.tokens, p.page_size, l.budget);
    if (!v.passed()) return v;
  }
  // Stage 3: per group, the oracle's admissibility (budget, reserved sink pages, the walk over tie classes).
  for (Index g = 0; g < groups; ++g) {
    Verdict v = group_admissible(c, g, p, l, a.kept_pages[g]);
    if (v.passed()) continue;
    v.message = "group " + std::to_string(g) + ": " + v.message + " (kept " + list_text(a.kept_pages[g]) + ")";
    // A walk that cannot produce the pages (or that drops a reserved page) may be a known mistake: name it.
    if (v.rule == "tie-order" || v.rule == "reserved") return name_mistake(c, g, l, a.kept_pages[g], v);
    return v;
  }
  return Verdict::conforms();
}

std::vector<std::vector<Index>> canonical_pages(const PageCase& c) {
  validate(c);
  std::vector<std::vector<Index>> out;
  for (Index g = 0; g < c.groups(); ++g) {
    std::vector<std::span<const float>> rows;
    for (Index h = g * c.params.group_size; h < (g + 1) * c.params.group_size; ++h) rows.push_back(c.row(h));
    out.push_back(paging::page_entrokv_group(rows, c.params).kept_pages);
  }
  return out;
}

}  // namespace kvaudit::conform
