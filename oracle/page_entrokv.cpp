// Reference Page-EntroKV: each function transcribes one definition of docs/specification.md section 5 in exact rationals.
#include "oracle/page_entrokv.h"

#include "oracle/chunk_internal.h"
#include "oracle/chunk_selection.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

namespace kvaudit::oracle::paging {

namespace {

// p * 2^149 as an integer: a finite float is m 2^e with e >= -149, and p 2^149 is exact in a double.
Integer scaled_to_integer(float p) {
  if (!std::isfinite(p)) throw std::invalid_argument("attention value is not finite");
  Integer z;
  mpz_set_d(z.backend().data(), std::ldexp(static_cast<double>(p), 149));
  return z;
}

const Integer& float_scale() {
  static const Integer scale = Integer(1) << 149;
  return scale;
}

}  // namespace

ScaledRow::ScaledRow(std::vector<Integer> n, Integer d) : numerators(std::move(n)), denominator(std::move(d)) {
  if (denominator == 0) throw std::invalid_argument("ScaledRow: zero denominator");
  if (denominator < 0) {
    denominator = -denominator;
    for (Integer& v : numerators) v = -v;
  }
}

std::vector<Exact> ScaledRow::values() const {
  std::vector<Exact> out;
  out.reserve(numerators.size());
  for (const Integer& n : numerators) out.emplace_back(n, denominator);
  return out;
}

ScaledRow::ScaledRow(const std::vector<Exact>& values) {
  // The lcm of the denominators, GMP's own calls on the rationals' parts in place: rationals derived from one row
  // share most of their denominators, so most steps are a divisibility test.
  mpz_ptr common = denominator.backend().data();
  for (const Exact& v : values) {
    mpz_srcptr d = mpq_denref(v.backend().data());
    if (mpz_divisible_p(common, d) == 0) mpz_lcm(common, common, d);
  }
  numerators.resize(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    mpz_ptr n = numerators[i].backend().data();
    mpz_divexact(n, common, mpq_denref(values[i].backend().data()));
    mpz_mul(n, n, mpq_numref(values[i].backend().data()));
  }
}

const char* to_string(PagePooling p) { return p == PagePooling::Entropy ? "entropy" : "mean"; }
const char* to_string(PoolSource p) { return p == PoolSource::SinkIsolated ? "sink-isolated" : "raw"; }
const char* to_string(PageScore p) { return p == PageScore::Sum ? "sum" : "max"; }
const char* to_string(SinkPages p) { return p == SinkPages::Reserved ? "reserved" : "scored"; }
const char* to_string(GreedyRule p) { return p == GreedyRule::SkipMisfits ? "skip-misfits" : "stop-at-first-misfit"; }
const char* to_string(EntropySource p) { return p == EntropySource::SinkIsolated ? "sink-isolated" : "raw"; }
const char* to_string(BudgetUnit p) { return p == BudgetUnit::Tokens ? "tokens" : "pages"; }
const char* to_string(PageCountRule p) { return p == PageCountRule::Paper ? "paper" : "entro-prefill"; }

// The page walk spends the same exact budget max(1, floor((1 - rho) T)) as every other method.
Index page_token_budget(Index tokens, const std::string& rho_text) { return exact_token_budget(tokens, rho_text); }

Index page_count_budget(Index tokens, Index page_size, const std::string& rho_text, PageCountRule rule) {
  if (tokens < 1 || page_size < 1) throw std::invalid_argument("page count: T and P must be >= 1");
  const detail::Rational kept = detail::Rational(1) - detail::parse_rho(rho_text);
  auto floor_of = [](const detail::Rational& x) {
    return (boost::multiprecision::numerator(x) / boost::multiprecision::denominator(x)).convert_to<Index>();
  };
  if (rule == PageCountRule::Paper) return floor_of(kept * tokens / page_size);
  const Index n_pages = (tokens + page_size - 1) / page_size;
  return std::max<Index>(1, floor_of(kept * n_pages));
}

Index page_walk_budget(Index tokens, const PageParams& params) {
  return params.budget_unit == BudgetUnit::Tokens ? page_token_budget(tokens, params.ratio_text)
                                                  : page_count_budget(tokens, params.page_size, params.ratio_text, params.page_count_rule);
}

Index page_token_capacity(Index tokens, const PageParams& params) {
  if (params.budget_unit == BudgetUnit::Tokens) return page_token_budget(tokens, params.ratio_text);
  return std::min(tokens, page_walk_budget(tokens, params) * params.page_size);
}

std::optional<ScaledRow> sink_isolate(std::span<const float> p, Index n_sink) {
  if (n_sink < 0) throw std::invalid_argument("sink_isolate: n_sink must be >= 0");
  const std::size_t T = p.size(), sinks = std::min(static_cast<std::size_t>(n_sink), T);
  // p~(t) = (p(t) 2^149) / (sum_{u >= n_sink} p(u) 2^149): integers over the scaled non-sink mass.
  std::vector<Integer> scaled(T);
  Integer mass = 0;
  for (std::size_t t = sinks; t < T; ++t) {
    scaled[t] = scaled_to_integer(p[t]);
    mass += scaled[t];
  }
  if (mass == 0) return std::nullopt;
  return ScaledRow(std::move(scaled), std::move(mass));
}

ScaledRow exact_row(std::span<const float> p) {
  std::vector<Integer> scaled;
  scaled.reserve(p.size());
  for (float v : p) scaled.push_back(scaled_to_integer(v));
  return ScaledRow(std::move(scaled), float_scale());
}

Exact collision_probability(const ScaledRow& q) {
  Integer squares = 0;
  for (const Integer& n : q.numerators) squares += n * n;
  return Exact(squares, q.denominator * q.denominator);
}

double renyi2_entropy(const Exact& collision) {
  return collision > 0 ? -std::log(collision.convert_to<double>()) : INFINITY;
}

std::vector<Exact> group_weights(const std::vector<std::optional<ScaledRow>>& entropy_rows, PagePooling pooling,
                                 Index inverse_temperature) {
  if (inverse_temperature < 1) throw std::invalid_argument("group_weights: 1/tau must be >= 1");
  const std::size_t G = entropy_rows.size();
  std::vector<Exact> w(G, Exact(1, static_cast<long>(G)));
  if (pooling == PagePooling::Mean) return w;
  std::vector<Exact> c(G, Exact(0));
  Exact total = 0;
  for (std::size_t h = 0; h < G; ++h) {
    if (entropy_rows[h]) {
      const Exact collision = collision_probability(*entropy_rows[h]);
      c[h] = 1;
      for (Index j = 0; j < inverse_temperature; ++j) c[h] *= collision;  // exp(-H2 / tau) = c^(1/tau)
    }
    total += c[h];
  }
  if (total == 0) return w;  // no head has a non-sink distribution: nothing to prefer
  for (std::size_t h = 0; h < G; ++h) w[h] = c[h] / total;
  return w;
}

ScaledRow pooled_scores(const std::vector<ScaledRow>& sources, const std::vector<Exact>& weights) {
  // s(t) = sum_h (w_h / d_h) n_h(t); the G factors w_h / d_h over one denominator Y, a_h / Y, give
  // s(t) = [sum_h a_h n_h(t)] / Y: integer products per position, no reduction.
  const std::size_t T = sources.empty() ? 0 : sources[0].size();
  std::vector<Exact> factors;
  for (std::size_t h = 0; h < sources.size(); ++h) factors.push_back(weights[h] / Exact(sources[h].denominator));
  const ScaledRow a(factors);
  std::vector<Integer> s(T);
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t h = 0; h < sources.size(); ++h) s[t] += a.numerators[h] * sources[h].numerators[t];
  return ScaledRow(std::move(s), a.denominator);
}

std::vector<Page> page_layout(Index tokens, Index page_size) {
  if (page_size < 1) throw std::invalid_argument("page size must be >= 1");
  std::vector<Page> pages;
  for (Index b = 0; b < tokens; b += page_size) pages.push_back({b, std::min(b + page_size, tokens)});
  return pages;
}

std::vector<Exact> page_scores(const ScaledRow& token_scores, const std::vector<Page>& pages, PageScore kind) {
  // Over one positive denominator, sums and maxima of the values are those of the numerators.
  std::vector<Exact> out;
  for (const Page& pg : pages) {
    Integer v = token_scores.numerators[pg.begin];
    for (Index t = pg.begin + 1; t < pg.end; ++t) {
      if (kind == PageScore::Sum) v += token_scores.numerators[t];
      else if (token_scores.numerators[t] > v) v = token_scores.numerators[t];
    }
    out.emplace_back(v, token_scores.denominator);
  }
  return out;
}

std::vector<Page> walk_costs(const std::vector<Page>& pages, BudgetUnit unit) {
  if (unit == BudgetUnit::Tokens) return pages;
  std::vector<Page> units;
  for (Index k = 0; k < static_cast<Index>(pages.size()); ++k) units.push_back({k, k + 1});
  return units;
}

std::vector<bool> reserved_pages(const std::vector<Page>& pages, Index n_sink, SinkPages policy) {
  std::vector<bool> r(pages.size(), false);
  if (policy == SinkPages::Reserved)
    for (std::size_t k = 0; k < pages.size(); ++k) r[k] = pages[k].begin < n_sink;
  return r;
}

namespace {
// The visiting order of the walk: reserved pages by index, then (score desc, index asc).
std::vector<Index> walk_order(const std::vector<Exact>& scores, const std::vector<bool>& reserved) {
  std::vector<Index> order(scores.size());
  std::iota(order.begin(), order.end(), Index{0});
  std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) {
    if (reserved[a] != reserved[b]) return static_cast<bool>(reserved[a]);
    if (reserved[a]) return a < b;
    if (scores[a] != scores[b]) return scores[a] > scores[b];
    return a < b;
  });
  return order;
}
}  // namespace

std::vector<Index> select_pages(const std::vector<Exact>& scores, const std::vector<Page>& pages,
                                const std::vector<bool>& reserved, Index budget, GreedyRule rule) {
  std::vector<Index> kept;
  Index retained = 0;
  for (Index k : walk_order(scores, reserved)) {
    if (retained + pages[k].size() <= budget) {
      kept.push_back(k);
      retained += pages[k].size();
    } else if (rule == GreedyRule::StopAtFirstMisfit) {
      break;
    }
  }
  std::sort(kept.begin(), kept.end());
  return kept;
}

std::vector<ScaledRow> pooling_sources(const std::vector<std::span<const float>>& rows, const PageParams& params) {
  std::vector<ScaledRow> sources;
  for (const auto& row : rows) {
    if (params.source == PoolSource::Raw) {
      sources.push_back(exact_row(row));
      continue;
    }
    auto isolated = sink_isolate(row, params.n_sink);
    sources.push_back(isolated ? std::move(*isolated) : ScaledRow(std::vector<Integer>(row.size()), Integer(1)));
  }
  return sources;
}

GroupResult page_entrokv_group(const std::vector<std::span<const float>>& rows, const PageParams& params) {
  GroupResult r;
  const Index T = rows.empty() ? 0 : static_cast<Index>(rows[0].size());
  std::vector<std::optional<ScaledRow>> entropy_rows(rows.size());  // mean pooling reads none of them
  if (params.pooling == PagePooling::Entropy)
    for (std::size_t h = 0; h < rows.size(); ++h)
      entropy_rows[h] = params.entropy_on == EntropySource::Raw ? exact_row(rows[h]) : sink_isolate(rows[h], params.n_sink);
  r.weights = group_weights(entropy_rows, params.pooling, params.inverse_temperature);
  const std::vector<ScaledRow> sources = pooling_sources(rows, params);
  r.token_scores = pooled_scores(sources, r.weights);
  const std::vector<Page> pages = page_layout(T, params.page_size);
  r.page_scores = page_scores(r.token_scores, pages, params.page_score);
  r.reserved = reserved_pages(pages, params.n_sink, params.sink_pages);
  r.budget = page_walk_budget(T, params);
  r.kept_pages = select_pages(r.page_scores, walk_costs(pages, params.budget_unit), r.reserved, r.budget, params.greedy);
  for (Index k : r.kept_pages)
    for (Index t = pages[k].begin; t < pages[k].end; ++t) r.kept_tokens.push_back(t);
  return r;
}

Index PageLedger::kept_total() const {
  Index n = 0;
  for (auto v : kept) n += v != 0;
  return n;
}

PagedSelection page_entrokv(const ScoreTensor& attn, const PageParams& params) {
  if (params.group_size < 1 || attn.heads % params.group_size != 0)
    throw std::invalid_argument("q_heads is not a multiple of the group size");
  const std::vector<Page> pages = page_layout(attn.tokens, params.page_size);
  PagedSelection out;
  out.tokens = attn.tokens;
  out.page_size = params.page_size;
  out.budget = page_token_capacity(attn.tokens, params);
  const Index groups = attn.heads / params.group_size;
  out.ledger = {attn.layers, groups, static_cast<Index>(pages.size()),
                std::vector<std::uint8_t>(static_cast<std::size_t>(attn.layers * groups) * pages.size(), 0)};
  for (Index l = 0; l < attn.layers; ++l) {
    for (Index g = 0; g < groups; ++g) {
      std::vector<std::span<const float>> rows;
      for (Index h = g * params.group_size; h < (g + 1) * params.group_size; ++h) rows.push_back(attn.row(l, h));
      GroupResult r = page_entrokv_group(rows, params);
      for (Index k : r.kept_pages) out.ledger.kept[static_cast<std::size_t>((l * groups + g) * out.ledger.pages + k)] = 1;
      out.kept_tokens.push_back(r.kept_tokens);
      out.groups.push_back(std::move(r));
    }
  }
  return out;
}

Verdict check_page_accounting(const PageLedger& ledger, const std::vector<Positions>& token_sets, Index tokens,
                              Index page_size, Index budget) {
  const std::vector<Page> pages = page_layout(tokens, page_size);
  if (static_cast<Index>(pages.size()) != ledger.pages || static_cast<Index>(token_sets.size()) != ledger.layers * ledger.groups)
    return Verdict::violates("token-set", "ledger shape does not match the token sets or the page layout");
  Index total_from_sets = 0;
  for (Index l = 0; l < ledger.layers; ++l) {
    for (Index g = 0; g < ledger.groups; ++g) {
      const Positions& set = token_sets[static_cast<std::size_t>(l * ledger.groups + g)];
      const std::string where = "layer " + std::to_string(l) + " group " + std::to_string(g);
      // Way 1: the ledger.
      Index ledger_pages = 0, ledger_tokens = 0;
      for (Index p = 0; p < ledger.pages; ++p)
        if (ledger.at(l, g, p)) ++ledger_pages, ledger_tokens += pages[p].size();
      // Way 2: the token set alone.
      std::set<Index> distinct(set.begin(), set.end());
      if (distinct.size() != set.size() || (!set.empty() && (set.front() < 0 || set.back() >= tokens)))
        return Verdict::violates("token-set", where + ": positions repeated or out of range");
      std::map<Index, Index> touched;  // page -> how many of the set's positions lie on it
      for (Index t : set) ++touched[t / page_size];
      const Index set_pages = static_cast<Index>(touched.size()), set_tokens = static_cast<Index>(set.size());
      if (set_pages != ledger_pages)
        return Verdict::violates("pages-agree", where + ": ledger has " + std::to_string(ledger_pages) +
                                                     " pages, token set touches " + std::to_string(set_pages));
      if (set_tokens != ledger_tokens)
        return Verdict::violates("tokens-agree", where + ": ledger pages hold " + std::to_string(ledger_tokens) +
                                                      " tokens, token set has " + std::to_string(set_tokens));
      for (const auto& [p, on_page] : touched)
        if (!ledger.at(l, g, p) || on_page != pages[p].size())
          return Verdict::violates("whole-pages", where + ": page " + std::to_string(p) + " is partly selected or not in the ledger");
      if (set_tokens > budget)
        return Verdict::violates("budget", where + ": retains " + std::to_string(set_tokens) + " > budget " + std::to_string(budget));
      total_from_sets += set_pages;
    }
  }
  if (total_from_sets != ledger.kept_total())
    return Verdict::violates("total", "sum of per-group pages " + std::to_string(total_from_sets) +
                                          " != kept ledger tuples " + std::to_string(ledger.kept_total()));
  return Verdict::conforms();
}

Verdict check_pages_admissible(const std::vector<Exact>& scores, const std::vector<Page>& pages,
                               const std::vector<bool>& reserved, Index budget, GreedyRule rule,
                               const std::vector<Index>& claimed, const Exact& rel_tol) {
  const Index n = static_cast<Index>(pages.size());
  // Stage 1: shape.
  for (std::size_t i = 0; i < claimed.size(); ++i)
    if (claimed[i] < 0 || claimed[i] >= n || (i > 0 && claimed[i] <= claimed[i - 1]))
      return Verdict::violates("shape", "kept page indices must be strictly increasing and in [0, " + std::to_string(n) + ")");
  std::vector<bool> in(static_cast<std::size_t>(n), false);
  Index retained = 0;
  for (Index k : claimed) in[k] = true, retained += pages[k].size();
  // Stage 2: budget.
  if (retained > budget)
    return Verdict::violates("budget", "retains " + std::to_string(retained) + " > budget " + std::to_string(budget));
  // Stage 3: reserved pages are walked first, in index order: no freedom there.
  Index used = 0;
  bool stopped = false;
  for (Index k = 0; k < n; ++k) {
    if (!reserved[k]) continue;
    bool take = !stopped && used + pages[k].size() <= budget;
    if (!take && rule == GreedyRule::StopAtFirstMisfit) stopped = true;
    if (take) used += pages[k].size();
    if (take != in[k]) return Verdict::violates("reserved", "reserved page " + std::to_string(k) + (take ? " must be kept" : " cannot fit"));
  }
  // Stage 4: scored pages. Sort, cut into tie classes, then try every position of the (unique) short page
  // inside its class: full pages of one class are interchangeable, so only per-class counts matter.
  std::vector<Index> order;
  for (Index k = 0; k < n; ++k)
    if (!reserved[k]) order.push_back(k);
  std::stable_sort(order.begin(), order.end(), [&](Index a, Index b) { return scores[a] > scores[b]; });
  std::vector<std::vector<Index>> classes;
  for (std::size_t i = 0; i < order.size(); ++i) {
    bool tied = i > 0 && scores[order[i - 1]] - scores[order[i]] <= rel_tol * (scores[order[i - 1]] + scores[order[i]]);
    if (!tied) classes.emplace_back();
    classes.back().push_back(order[i]);
  }
  Index full = 0;
  for (const Page& pg : pages) full = std::max(full, pg.size());
  Index short_class = -1, short_page = -1;
  for (std::size_t c = 0; c < classes.size(); ++c)
    for (Index k : classes[c])
      if (pages[k].size() < full) short_class = static_cast<Index>(c), short_page = k;
  std::vector<Index> claimed_full(classes.size(), 0);
  for (std::size_t c = 0; c < classes.size(); ++c)
    for (Index k : classes[c])
      if (in[k] && k != short_page) ++claimed_full[c];
  const bool claimed_short = short_page >= 0 && in[short_page];
  const Index positions = short_class >= 0 ? static_cast<Index>(classes[short_class].size()) : 1;
  // Where the claim leaves the walk: the class at which the order that follows the claim furthest first keeps
  // something else (the walk state before it is then the claim's own), and what the orders keep there.
  struct ClassOutcome {
    Index full = 0;
    bool short_taken = false;
    bool operator==(const ClassOutcome&) const = default;
  };
  Index decision = -1, used_before = 0;
  bool stopped_before = false;
  std::vector<ClassOutcome> outcomes;  // per position j of the short page: what the decision class keeps
  if (classes.empty()) return Verdict::conforms();
  for (Index j = 0; j < positions; ++j) {
    Index u = used;
    bool stop = stopped;
    for (std::size_t c = 0; c < classes.size(); ++c) {
      // The sizes this class presents to the walk: its full pages, with the short page at position j.
      std::vector<Index> sizes(classes[c].size(), full);
      const bool has_short = static_cast<Index>(c) == short_class;
      if (has_short) sizes[static_cast<std::size_t>(j)] = pages[short_page].size();
      const Index u_in = u;
      const bool stop_in = stop;
      ClassOutcome got;
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        const bool is_short = has_short && static_cast<Index>(i) == j;
        if (!stop && u + sizes[i] <= budget) {
          u += sizes[i];
          if (is_short) got.short_taken = true; else ++got.full;
        } else if (rule == GreedyRule::StopAtFirstMisfit) {
          stop = true;
        }
      }
      if (got == ClassOutcome{claimed_full[c], has_short && claimed_short}) {
        if (c + 1 == classes.size()) return Verdict::conforms();
        continue;
      }
      if (static_cast<Index>(c) > decision) decision = static_cast<Index>(c), used_before = u_in, stopped_before = stop_in, outcomes.clear();
      if (static_cast<Index>(c) == decision) outcomes.push_back(got);
      break;
    }
  }
  // The claim keeps what no walk keeps at class `decision`. It really ties there only when pages of that class
  // are tied and their order changes what the walk keeps; otherwise the score order alone decides against it.
  const std::vector<Index>& at = classes[static_cast<std::size_t>(decision)];
  auto score_text = [&](Index k) {
    char buf[32];  // the shortest text of the nearest double: near ties that differ show it
    const auto r = std::to_chars(buf, buf + sizeof buf, scores[k].convert_to<double>());
    return std::string(buf, r.ptr);
  };
  auto list = [](const std::vector<Index>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  };
  std::vector<Index> sorted_at = at, kept_at;
  std::sort(sorted_at.begin(), sorted_at.end());
  for (Index k : sorted_at)
    if (in[k]) kept_at.push_back(k);
  const std::string state = "with " + std::to_string(used_before) + " of budget " + std::to_string(budget) + " retained" +
                            (stopped_before ? " and the walk stopped at a misfit" : "");
  const bool order_matters = std::any_of(outcomes.begin(), outcomes.end(), [&](const ClassOutcome& o) { return !(o == outcomes[0]); });
  if (at.size() > 1 && order_matters) {
    std::string tied;
    for (Index k : sorted_at) tied += (tied.empty() ? "" : ", ") + std::string("page ") + std::to_string(k) + " " + score_text(k);
    return Verdict::violates("tie-order", "pages " + list(sorted_at) + " tie (exact scores " + tied +
                                              ", equal within the tolerance); the walk reaches them " + state +
                                              ", and no order of them keeps the claimed " + list(kept_at) + " of them");
  }
  if (at.size() == 1) {
    const Index k = at[0];
    const bool walk_keeps = outcomes[0].full > 0 || outcomes[0].short_taken;
    return Verdict::violates("score-order", "page " + std::to_string(k) + " (exact score " + score_text(k) +
                                                ", tied with no other page) " + (walk_keeps ? "must be kept" : "cannot be kept") +
                                                ": the walk in decreasing score reaches it " + state + "; the claim " +
                                                (in[k] ? "keeps" : "drops") + " it");
  }
  std::string tied;
  for (Index k : sorted_at) tied += (tied.empty() ? "" : ", ") + score_text(k);
  const Index walk_count = outcomes[0].full + (outcomes[0].short_taken ? 1 : 0);
  return Verdict::violates("score-order", "pages " + list(sorted_at) + " (exact scores " + tied +
                                              ", tied with each other) are reached " + state + "; every order of them keeps " +
                                              std::to_string(walk_count) + " of them, the claim keeps " + list(kept_at));
}

}  // namespace kvaudit::oracle::paging
