// The boundary-DAG label search of partition_rcsp.h on boost::r_c_shortest_paths. The only translation unit
// that includes Boost.Graph (the header is template-heavy; docs/pooling.md states the compile time it adds).
//
// r_c_shortest_paths returns every label at the sink that no other label dominates; it has no objective of its
// own, "shortest" is whatever the dominance relation makes it. The objective here, the largest H subject to
// H <= R, is not monotone along a path (a label with more entropy so far may be the one that overshoots R
// later), so no dominance of the form "more entropy is better" is sound, nor is any priority order that would
// let the search stop at the first sink label. We therefore use the only sound dominance, an exact tie (same
// node, same edge count, equal exact entropy: the two labels have the same completions with the same
// feasibility and value), keep every non-dominated sink label, and pick the optimum among them by exact
// comparison and the canonical tie rule. Among tied labels the one with the lexicographically smaller path
// dominates, so the canonical optimum's prefixes are never removed. The price is that the search enumerates
// every distinct-entropy partial path: it is an oracle for small n and for instances whose budget prunes.
#include "oracle/partition_rcsp.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <vector>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/r_c_shortest_paths.hpp>
#include <boost/multiprecision/mpfr.hpp>

#include "core/exact/log_linear_sign.h"

namespace kvaudit::oracle {

namespace {

using exact::Integer;
using exact::LogLinearForm;
using exact::Rational;
using Real = boost::multiprecision::mpfr_float_100;  // only for the reported entropy, as the enumeration reports it
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                                    boost::property<boost::edge_index_t, int>>;
using Edge = boost::graph_traits<Graph>::edge_descriptor;
using Clock = std::chrono::steady_clock;

// A label's resources: the path so far (its edge count is bounds.size() - 1) and its entropy in double. The
// path stands in for the entropy's exact value (the exact masses are read off it) and carries the tie rule.
struct Label {
  std::vector<Index> bounds{0};  // 0 = b_0 < ... < b_k
  double H = 0.0;                // sum of the double h of its groups, left to right
  Index edges() const { return static_cast<Index>(bounds.size()) - 1; }
};
// The library pops the least label first: by node, so every label of a node exists before the first of them is
// popped and its node's dominance pass runs once over all of them; then by path, so the order is total and the
// run is deterministic (priority_queue is not stable).
bool operator<(const Label& a, const Label& b) {
  if (a.bounds.back() != b.bounds.back()) return a.bounds.back() < b.bounds.back();
  return a.bounds < b.bounds;
}

enum class Cmp { Less, Equal, Greater };
Cmp from_sign(int s) { return s < 0 ? Cmp::Less : s > 0 ? Cmp::Greater : Cmp::Equal; }

// The problem's numbers and every decision, filtered in double and decided exactly near ties.
class Search {
 public:
  Search(const std::vector<double>& p, double R) : n_(static_cast<Index>(p.size())), R_(R) {
    std::vector<Rational> prefix(static_cast<std::size_t>(n_ + 1));
    for (Index i = 0; i < n_; ++i) prefix[i + 1] = prefix[i] + Rational(p[i]);
    mass_.resize(static_cast<std::size_t>((n_ + 1) * (n_ + 1)));
    h_.assign(mass_.size(), 0.0);
    for (Index i = 0; i <= n_; ++i)
      for (Index j = i + 1; j <= n_; ++j) {
        Rational& q = mass_[at(i, j)];
        q = prefix[j] - prefix[i];
        const double qd = q.convert_to<double>();
        h_[at(i, j)] = qd > 0.0 ? -qd * std::log2(qd) : 0.0;
      }
    total_ = std::fabs(prefix[n_].convert_to<double>()) * (1.0 + 0x1p-50);
    // h >= 0 needs every group mass <= 1, and inputs normalized in double often sum to 1 plus a few ulp
    // exactly; refusing them would refuse most real rows, and ignoring it would prune unsoundly. A group of
    // mass q > 1 has h(q) >= h(Q) (h decreases past 1/e, q <= Q = the total), and a partition has at most
    // floor(Q) such groups (k of them weigh more than k): so whatever follows a label adds at least
    // c h(Q), c = floor(Q), and a label is hopeless when H + c h(Q) > R. c = 0 for Q < 1.
    total_exact_ = prefix[n_];
    if (total_exact_ > 1) {
      slack_groups_ = static_cast<int>(Integer(numerator(total_exact_) / denominator(total_exact_)).convert_to<long>());
      const double Q = total_exact_.convert_to<double>();
      slack_ = slack_groups_ * (-Q * std::log2(Q));
    }
  }

  Index n() const { return n_; }
  double h(Index i, Index j) const { return h_[at(i, j)]; }

  // Bound on |H_double - H_exact| for a path of k groups. Derivation: q is rounded to double within 2u q
  // (u = 2^-53; GMP truncates), log2 within 2 ulp of its argument's log (glibc: < 1), and the argument's error
  // moves log2 by <= 2u / ln 2 < 3u; one product: |h_double - h| <= 7u h + 5u q + O(u^2). k terms summed
  // left to right add (k - 1) u H. So |err| <= u ((k + 6) H + 5 Q), Q = total mass; we take four times that
  // (2^-51 ((k + 8) H + 8 Q)), plus k 2^-1000 for subnormal masses, whose relative error is unbounded.
  double err(double H, Index k) const {
    return 0x1p-51 * ((static_cast<double>(k) + 8.0) * std::fabs(H) + 8.0 * total_) + static_cast<double>(k) * 0x1p-1000;
  }

  // H(label) > R exactly (at the sink), or H(label) + c h(Q) > R (inside: no completion can be feasible).
  bool exceeds_budget(const Label& a, bool at_sink) {
    const int c = at_sink ? 0 : slack_groups_;
    const double H = a.H + (c ? slack_ : 0.0);
    const double e = err(std::fabs(a.H) + std::fabs(c ? slack_ : 0.0), a.edges() + c);
    if (H - e > R_) return true;
    if (H + e <= R_) return false;
    ++exact_decisions;
    LogLinearForm x;  // H + c h(Q) - R
    for (std::size_t k = 1; k < a.bounds.size(); ++k) x.add_entropy_term(mass(a.bounds[k - 1], a.bounds[k]), +1);
    for (int k = 0; k < c; ++k) x.add_entropy_term(total_exact_, +1);
    x.add_constant(-Rational(R_));
    return x.sign() > 0;
  }

  // H(a) against H(b), exactly.
  Cmp compare(const Label& a, const Label& b) {
    const double tol = err(a.H, a.edges()) + err(b.H, b.edges());
    if (a.H - b.H > tol) return Cmp::Greater;
    if (b.H - a.H > tol) return Cmp::Less;
    ++exact_decisions;
    // H is a function of the multiset of nonzero masses: masses both share cancel, and equal multisets (zeros
    // sliding across a cut, mirrored groups) tie without any logarithm.
    std::vector<Rational> qa = masses(a), qb = masses(b), only_a, only_b;
    std::set_difference(qa.begin(), qa.end(), qb.begin(), qb.end(), std::back_inserter(only_a));
    std::set_difference(qb.begin(), qb.end(), qa.begin(), qa.end(), std::back_inserter(only_b));
    if (only_a.empty() && only_b.empty()) return Cmp::Equal;
    LogLinearForm x;  // H(a) - H(b)
    for (const Rational& q : only_a) x.add_entropy_term(q, +1);
    for (const Rational& q : only_b) x.add_entropy_term(q, -1);
    return from_sign(x.sign());
  }

  const Rational& mass(Index i, Index j) const { return mass_[at(i, j)]; }

  std::int64_t exact_decisions = 0;

 private:
  std::size_t at(Index i, Index j) const { return static_cast<std::size_t>(i * (n_ + 1) + j); }
  std::vector<Rational> masses(const Label& a) const {
    std::vector<Rational> q;
    for (std::size_t k = 1; k < a.bounds.size(); ++k)
      if (const Rational& m = mass(a.bounds[k - 1], a.bounds[k]); m != 0) q.push_back(m);
    std::sort(q.begin(), q.end());
    return q;
  }

  Index n_;
  double R_;
  double total_ = 0.0;         // the total mass, rounded up a little: the rounding bound's Q
  Rational total_exact_;
  int slack_groups_ = 0;       // c = floor(Q) when Q > 1, else 0
  double slack_ = 0.0;         // c h(Q) in double (<= 0)
  std::vector<Rational> mass_;  // (n + 1)^2, row-major: mass of (i, j]
  std::vector<double> h_;       // h of that mass rounded to double
};

// What the functors share: the search, the edge-count rule and the limits.
struct Run {
  Search search;
  std::optional<Index> m;
  Clock::time_point start, deadline;
  std::int64_t max_labels = 0;
  RcspStats stats;
  bool stopped = false;
  std::string why;
  std::int64_t dominance_calls = 0;

  bool out_of_time() {
    if (!stopped && Clock::now() > deadline) {
      stopped = true;
      why = "time limit";
    }
    return stopped;
  }
};

// Extension along edge (i, j): refuses what cannot end as a feasible path with the required edge count.
struct Extend {
  Run* run;
  bool operator()(const Graph& g, Label& next, const Label& prev, const Edge& e) const {
    const Index i = static_cast<Index>(boost::source(e, g)), j = static_cast<Index>(boost::target(e, g));
    const Index n = run->search.n(), k = prev.edges() + 1;
    if (run->m) {
      const Index m = *run->m;
      if (j == n ? k != m : (k >= m || n - j < m - k)) return false;  // each later group needs a position
    }
    next.bounds.push_back(j);
    next.H = prev.H + run->search.h(i, j);
    // h >= 0 (groups of mass <= 1), so entropy only grows along a path: a label already above R has no feasible
    // completion. Search::exceeds_budget allows for the few groups heavier than 1 when the total exceeds 1.
    return !run->search.exceeds_budget(next, j == n);
  }
};

// a dominates b: an exact tie (the library asks only about labels at the same node; same edge count, equal
// exact entropy), and a's path is the lexicographically smaller, the canonical choice among tied partitions.
struct Dominance {
  Run* run;
  bool operator()(const Label& a, const Label& b) const {
    // A node's pass is quadratic in its labels and runs inside one loop iteration: look at the clock here too.
    // After the deadline nothing dominates, which is always sound; the visitor then ends the search.
    if ((++run->dominance_calls & 0xfff) == 0) run->out_of_time();
    if (run->stopped) return false;
    if (a.bounds.size() != b.bounds.size()) return false;
    const double tol = run->search.err(a.H, a.edges()) + run->search.err(b.H, b.edges());
    if (std::fabs(a.H - b.H) > tol) return false;
    if (!(a.bounds < b.bounds)) return false;
    if (run->search.compare(a, b) != Cmp::Equal) return false;
    ++run->stats.dominated;
    return true;
  }
};

struct Visitor {
  Run* run;
  template <class L, class G> void on_label_popped(const L&, const G&) {}
  template <class L, class G> void on_label_feasible(const L&, const G&) { ++run->stats.labels; }
  template <class L, class G> void on_label_not_feasible(const L&, const G&) { ++run->stats.refused; }
  template <class L, class G> void on_label_dominated(const L&, const G&) {}
  template <class L, class G> void on_label_not_dominated(const L&, const G&) {}
  template <class Q, class G> bool on_enter_loop(const Q& queue, const G&) {
    // Labels pop by node, so once the least is at the sink only sink labels are left. They have no out-edges:
    // popping them would only run the sink's dominance pass, and the library walks a node's whole label list on
    // every pop there (quadratic, most of the search's time at fixed m). The search is complete; the final
    // selection settles the sink's ties exactly instead.
    if (!queue.empty() && static_cast<Index>(queue.top()->resident_vertex) == run->search.n()) return false;
    if (!run->stopped && run->stats.labels > run->max_labels) {
      run->stopped = true;
      run->why = "label limit (memory)";
    }
    return !run->out_of_time();
  }
};

bool canonical_before(const Label& a, const Label& b) {
  if (a.bounds.size() != b.bounds.size()) return a.bounds.size() < b.bounds.size();
  return a.bounds < b.bounds;
}

Real h_real(const Rational& q) {
  if (q == 0) return Real(0);
  const Real x(q);
  return Real(-x * boost::multiprecision::log2(x));
}

}  // namespace

PartitionAnswer solve_rcsp(const PartitionProblem& problem, const RcspLimits& limits, RcspStats* stats_out) {
  const Index n = static_cast<Index>(problem.p.size());
  if (n < 1) throw std::invalid_argument("empty probability vector");
  if (problem.groups && (*problem.groups < 1 || *problem.groups > n))
    throw std::invalid_argument("groups must be in [1, n]");
  for (double x : problem.p)
    if (!std::isfinite(x) || x < 0) throw std::invalid_argument("probabilities must be finite and >= 0");
  if (std::isnan(problem.budget_bits)) throw std::invalid_argument("budget must be a number");

  Run run{Search(problem.p, problem.budget_bits), problem.groups, Clock::now(), {}, limits.max_labels, {}, false, {}, 0};
  run.deadline = run.start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits.max_seconds));

  Graph g(static_cast<std::size_t>(n + 1));
  int edge_id = 0;
  for (Index i = 0; i < n; ++i)
    for (Index j = i + 1; j <= n; ++j) boost::add_edge(static_cast<std::size_t>(i), static_cast<std::size_t>(j), edge_id++, g);

  std::vector<std::vector<Edge>> paths;
  std::vector<Label> sink;
  boost::r_c_shortest_paths(g, boost::get(boost::vertex_index, g), boost::get(boost::edge_index, g), 0,
                            static_cast<std::size_t>(n), paths, sink, Label{}, Extend{&run}, Dominance{&run},
                            std::allocator<int>(), Visitor{&run});
  run.stats.labels += 1;  // the source's
  run.stats.sink_labels = static_cast<std::int64_t>(sink.size());

  // Every sink label is feasible with the required edge count (Extend refused the rest): the optimum is the
  // largest exact entropy, ties to the canonical partition.
  const Label* best = nullptr;
  for (const Label& l : sink) {
    if (!best) { best = &l; continue; }
    const Cmp c = run.search.compare(l, *best);
    if (c == Cmp::Greater || (c == Cmp::Equal && canonical_before(l, *best))) best = &l;
  }

  PartitionAnswer out;
  out.solver = "rcsp";
  out.strategy = "r_c_shortest_paths";
  out.feasible = best != nullptr;
  if (best) {
    out.cuts.assign(best->bounds.begin() + 1, best->bounds.end() - 1);
    Real H = 0;
    for (std::size_t k = 1; k < best->bounds.size(); ++k) {
      const Rational& q = run.search.mass(best->bounds[k - 1], best->bounds[k]);
      out.masses.push_back(Real(q).convert_to<double>());
      H += h_real(q);
    }
    out.entropy_bits = H.convert_to<double>();
  }
  out.complete = !run.stopped;
  out.certified = out.complete;  // every label extended or exactly tied, every decision exact
  out.nodes = run.stats.labels;
  out.extended_decisions = run.search.exact_decisions;
  if (out.certified) {
    out.optimum_upper = out.feasible ? out.entropy_bits : std::numeric_limits<double>::quiet_NaN();
    out.upper_source = "certified";
  } else {
    out.optimum_upper = problem.budget_bits;
    out.upper_source = "budget";
    out.note = "stopped by the " + run.why + " after " + std::to_string(run.stats.labels) + " labels";
  }
  run.stats.exact_decisions = run.search.exact_decisions;
  run.stats.seconds = std::chrono::duration<double>(Clock::now() - run.start).count();
  if (stats_out) *stats_out = run.stats;
  return out;
}

}  // namespace kvaudit::oracle
