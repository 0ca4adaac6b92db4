// EG-ChunkKV's rule-by-rule admissibility: is there a tie order (and a choice of computed statistics inside
// their error intervals) under which the walk + top-up of docs/specification.md section 3 produces exactly the claim?
//
// From the claim we read k_i, the kept count of every chunk. The walk ends in one of two ways:
//   A. top-up: every chunk was visited and budget remained. Then plain chunks are whole, gated
//      (important-and-spiky) chunks got their top min(n_i, r) and the top-up added the best leftovers.
//      Chunk order is irrelevant; only the gates and the within-chunk / top-up rankings matter.
//   B. no top-up: the visited chunks are exactly those with k_i > 0; they precede the unvisited ones in
//      the order, and the last visited chunk m is where the budget ran out. Every other visited chunk is
//      whole (plain) or cut to min(n_i, r) (gated); m keeps k_m <= n_m (plain) or k_m <= min(n_m, r) (gated).
// Gates: a chunk's importance / spikiness is possible iff it holds with the chunk's statistic at one end of
// its interval and all others at the opposite end; gates possible both ways are free, but together they
// must satisfy the median's counting constraints (at least n - floor((n-1)/2) chunks are >= the lower
// median, at most floor((n-1)/2) are below it). All of this is at most quadratic in the number of chunks:
// no search, so the checker never needs to give up.
#include <algorithm>
#include <limits>
#include <optional>
#include <type_traits>

#include "oracle/admissibility_internal.h"

namespace kvaudit::oracle::detail {
namespace {

struct Possible {
  bool important_true = false, important_false = false;
  bool spiky_true = false, spiky_false = false;
  bool gated() const { return important_true && spiky_true; }      // important and spiky can both hold
  bool plain() const { return important_false || spiky_false; }    // one of them can fail
};

// Per-chunk options in one scenario; `contrib`: gating this chunk leaves budget for the top-up.
struct Choice {
  bool gated_ok = false, plain_ok = false, contrib = false;
};

std::string yes_no_either(bool t, bool f) { return t && f ? "either" : (t ? "yes" : "no"); }

std::string describe(Index i, const Chunk& c, const Possible& g) {
  return "chunk " + std::to_string(i) + " [" + std::to_string(c.begin) + ", " + std::to_string(c.end) + ") (important: " +
         yes_no_either(g.important_true, g.important_false) + ", spiky: " + yes_no_either(g.spiky_true, g.spiky_false) + ")";
}

// Is there a gate assignment with every chunk's option respected, >= min_important important chunks,
// <= max_spiky spiky chunks and (if need_contrib) at least one gated chunk leaving budget to the top-up?
// For a plain chunk the best (important, spiky) pair is chosen: (1,0) > (0,0) > (0,1), each dominating the next.
bool counts_feasible(const std::vector<Choice>& choices, const std::vector<Possible>& poss, Index min_important,
                     Index max_spiky, bool need_contrib) {
  Index important = 0, spiky = 0, free_zero = 0;
  bool contrib = false, free_one_contrib = false, free_zero_contrib = false;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    const Choice& c = choices[i];
    const Possible& p = poss[i];
    if (!c.gated_ok && !c.plain_ok) return false;
    int plain_imp = p.important_true && p.spiky_false ? 1 : 0;
    int plain_spk = !p.spiky_false ? 1 : 0;  // only when spikiness is forced true (then importance is false)
    if (c.gated_ok && (!c.plain_ok || plain_spk == 1)) {  // forced gated, or gating costs no spikiness
      ++important;
      ++spiky;
      contrib |= c.contrib;
    } else if (!c.gated_ok) {
      important += plain_imp;
      spiky += plain_spk;
    } else if (plain_imp == 1) {  // free, plain is (1,0): gating only adds spikiness
      ++important;
      free_one_contrib |= c.contrib;
    } else {  // free, plain is (0,0): gating adds one important and one spiky
      ++free_zero;
      free_zero_contrib |= c.contrib;
    }
  }
  auto ok = [&](Index deficit, Index slack, Index zeros) {
    Index take = std::max<Index>(deficit, 0);
    return slack >= 0 && take <= zeros && take <= slack;
  };
  Index deficit = min_important - important, slack = max_spiky - spiky;
  if (!need_contrib || contrib) return ok(deficit, slack, free_zero);
  return (free_one_contrib && ok(deficit, slack - 1, free_zero)) ||
         (free_zero_contrib && ok(deficit - 1, slack - 1, free_zero - 1));
}

// Whether two values are known to be equal without a decision that could throw: exactly, in 50 digits; by a shared
// tie key or as equal points, in double enclosures (false there only means "not known").
bool same_value(const Real& a, const Real& b) { return a == b; }
bool same_value(const DoubleEnclosure& a, const DoubleEnclosure& b) { return known_equal(a, b); }

// The k-th smallest of `sorted` after its element at `removed` is replaced by `replacement`, in O(log n).
// `is_replacement` says whether the answer is the replacement itself.
template <class V>
V kth_with_replacement(const std::vector<V>& sorted, std::size_t removed, const V& replacement, std::size_t k,
                       bool& is_replacement) {
  auto at = [&](std::size_t t) -> const V& { return sorted[t < removed ? t : t + 1]; };  // sorted minus one
  std::size_t lo = 0, hi = sorted.size() - 1;  // first index of the reduced array with value >= replacement
  while (lo < hi) {
    std::size_t mid = (lo + hi) / 2;
    if (at(mid) < replacement) lo = mid + 1;
    else hi = mid;
  }
  is_replacement = k == lo;
  if (k < lo) return at(k);
  if (k == lo) return replacement;
  return at(k - 1);
}

// The median of `sorted` after its element at `removed` is replaced by `replacement`. `removed` is the
// element's own rank (any position of an equal value gives the same median; the filtered path cannot search
// for a value among enclosures that may overlap it). `is_replacement`: the median is the replacement itself,
// so comparing the chunk's statistic with it is comparing a value with itself, which enclosures cannot decide.
template <class V>
V median_with_replacement(const std::vector<V>& sorted, std::size_t removed, const V& replacement, MedianRule rule,
                          bool& is_replacement) {
  std::size_t n = sorted.size(), k = (n - 1) / 2;
  V lower = kth_with_replacement(sorted, removed, replacement, k, is_replacement);
  if (rule == MedianRule::Lower || n % 2 == 1) return lower;
  bool upper_is_replacement = false;
  V upper = kth_with_replacement(sorted, removed, replacement, k + 1, upper_is_replacement);
  // Equal middles: the mean is that value exactly ((a + a) / 2 = a in binary floating point), and returning it keeps
  // its tie key, so a chunk tied with both middles compares equal in double instead of falling back.
  if (same_value(lower, upper)) return lower;
  is_replacement = false;
  return (lower + upper) / 2;
}

// The gate test of set_gates: is `value` >= the median of one end of every chunk's interval, with chunk `own`'s end
// replaced by `value`? The reference sorts the ends once and reads the median by rank (median_with_replacement).
// Sorting enclosures compares every pair of neighbours, and a near-tie between two other chunks, which cannot change
// the answer, would send the whole check to 50 digits. So in double enclosures the gate is first decided from the
// ends' enclosure bounds, each sorted as plain doubles (proofs/15_filtered_admissibility.md item 12):
//   - a single middle (the lower median, or an odd count): `value` is >= it iff at least k = (n-1)/2 of the other
//     ends are <= `value`; the bounds bracket that count, and only ends whose enclosures overlap `value`'s are
//     compared one by one;
//   - the mean of two middles: the bounds' order statistics enclose both middles, hence their mean.
// Only a gate these leave open sorts the ends as the reference does (and may throw UndecidedInDouble).
template <class V>
class MedianGate {
 public:
  MedianGate(const std::vector<IntervalOf<V>>& intervals, bool upper, MedianRule rule) : rule_(rule) {
    for (const IntervalOf<V>& v : intervals) ends_.push_back(upper ? v.hi : v.lo);
    if constexpr (std::is_same_v<V, DoubleEnclosure>) {
      for (const DoubleEnclosure& e : ends_) {
        lows_.push_back(e.lo());
        highs_.push_back(e.hi());
      }
      std::sort(lows_.begin(), lows_.end());
      std::sort(highs_.begin(), highs_.end());
    } else {
      sort_ends();
    }
  }

  bool at_least(Index own, const V& value) {
    const auto i = static_cast<std::size_t>(own);
    if constexpr (std::is_same_v<V, DoubleEnclosure>) {
      const bool single_middle = rule_ == MedianRule::Lower || ends_.size() % 2 == 1;
      if (single_middle) return at_least_by_count(i, value);
      if (const auto decided = against_middles_bracket(i, value)) return *decided;
      if (sorted_.empty()) sort_ends();
    }
    bool itself = false;
    V m = median_with_replacement(sorted_, rank_[i], value, rule_, itself);
    return itself || value >= m;
  }

 private:
  void sort_ends() {
    const std::size_t n = ends_.size();
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = i;
    // Indices, so no value is compared with itself (an enclosure cannot decide that).
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return a != b && ends_[a] < ends_[b]; });
    rank_.resize(n);
    for (std::size_t t = 0; t < n; ++t) {
      sorted_.push_back(ends_[order[t]]);
      rank_[order[t]] = t;
    }
  }

  static std::size_t at_most(const std::vector<double>& sorted, double bound) {
    return static_cast<std::size_t>(std::upper_bound(sorted.begin(), sorted.end(), bound) - sorted.begin());
  }

  // The k-th smallest (from 0) of `sorted` with one element equal to `removed` replaced by `inserted`.
  static double kth_replaced(const std::vector<double>& sorted, double removed, double inserted, std::size_t k) {
    const auto r = static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), removed) - sorted.begin());
    auto reduced = [&](std::size_t t) { return sorted[t < r ? t : t + 1]; };
    auto below = static_cast<std::size_t>(std::lower_bound(sorted.begin(), sorted.end(), inserted) - sorted.begin());
    if (r < below) --below;  // the removed element was below `inserted`
    if (k < below) return reduced(k);
    if (k == below) return inserted;
    return reduced(k - 1);
  }

  bool at_least_by_count(std::size_t own, const DoubleEnclosure& value) const {
    const std::size_t k = (ends_.size() - 1) / 2;
    const DoubleEnclosure& mine = ends_[own];
    // Others whose end is <= value for certain (upper bound <= value's lower), and possibly (lower <= value's upper).
    const std::size_t surely = at_most(highs_, value.lo()) - (mine.hi() <= value.lo() ? 1 : 0);
    const std::size_t maybe = at_most(lows_, value.hi()) - (mine.lo() <= value.hi() ? 1 : 0);
    if (surely >= k) return true;
    if (maybe < k) return false;
    std::size_t count = 0;
    for (std::size_t j = 0; j < ends_.size(); ++j)
      if (j != own && ends_[j] <= value) ++count;  // decided, or UndecidedInDouble
    return count >= k;
  }

  // value >= (k-th + (k+1)-th smallest) / 2, n even, when the enclosure of that mean decides it.
  std::optional<bool> against_middles_bracket(std::size_t own, const DoubleEnclosure& value) const {
    const std::size_t k = (ends_.size() - 1) / 2;
    const DoubleEnclosure& mine = ends_[own];
    auto middle = [&](std::size_t rank) {
      return DoubleEnclosure::between(kth_replaced(lows_, mine.lo(), value.lo(), rank),
                                      kth_replaced(highs_, mine.hi(), value.hi(), rank));
    };
    const DoubleEnclosure m = (middle(k) + middle(k + 1)) / DoubleEnclosure(2.0);
    if (value.lo() >= m.hi()) return true;
    if (value.hi() < m.lo()) return false;
    return std::nullopt;
  }

  MedianRule rule_;
  std::vector<V> ends_;               // by chunk
  std::vector<V> sorted_;             // the reference's order of the ends (in double: built only if needed)
  std::vector<std::size_t> rank_;     // chunk -> its position in sorted_
  std::vector<double> lows_, highs_;  // double enclosures: the ends' bounds, each sorted
};

struct Failure {
  int stage = -1;  // how far the scenario got; the furthest failure is reported
  Verdict verdict;
};

template <class V>
class EgChecker {
 public:
  EgChecker(const SelectorBoundsOf<V>& b, const SelectorParams& params, Index budget, const std::vector<bool>& keep,
            FiftyDigitTokenValues* fifty_digit_x)
      : b_(b), params_(params), keep_(keep), r_(params.rescue_size), fifty_digit_x_(fifty_digit_x) {
    (void)budget;  // the claim's size was checked against it already; k_i carry everything else
    n_chunks_ = static_cast<Index>(b.chunks.size());
    for (const Chunk& c : b.chunks) {
      Index k = 0;
      for (Index j = c.begin; j < c.end; ++j) k += keep[static_cast<std::size_t>(j)] ? 1 : 0;
      kept_.push_back(k);
    }
    set_gates();
  }

  Verdict run() {
    if (auto v = token_choice()) return *v;
    // Decided first without messages: a message names the chunks at the extremes, and in double enclosures finding
    // them takes comparisons the verdict does not need (which may be undecided).
    if (scenario_no_top_up(false).stage < 0 || scenario_top_up(false).stage < 0) return Verdict::conforms();
    Failure b = scenario_no_top_up(true), a = scenario_top_up(true);
    bool all_visited = std::all_of(kept_.begin(), kept_.end(), [](Index k) { return k > 0; });
    bool topped_up = false;
    for (Index i = 0; i < n_chunks_; ++i) topped_up |= kept_[i] < size(i) && kept_[i] > r_;
    // The top-up reading is reported only when it got past the gates (every cut chunk could be a rescue);
    // otherwise "the budget ran out in the wrong place" is the better explanation.
    return all_visited && topped_up && a.stage >= 3 ? a.verdict : b.verdict;
  }

 private:
  Index size(Index i) const { return b_.chunks[static_cast<std::size_t>(i)].size(); }
  const Chunk& chunk(Index i) const { return b_.chunks[static_cast<std::size_t>(i)]; }
  std::string name(Index i) const { return describe(i, chunk(i), poss_[static_cast<std::size_t>(i)]); }

  void set_gates() {
    // A chunk's own statistic moves the median it is compared with, so its gate is possible iff it holds
    // with the chunk at one end of its interval and every other chunk at the opposite end (the median is
    // monotone in each value). With zero-width intervals this is the exact gate.
    MedianGate<V> score_lo(b_.score, false, params_.median), score_hi(b_.score, true, params_.median);
    std::optional<MedianGate<V>> entropy_lo, entropy_hi;  // only when the spiky gate is the median entropy
    if (!params_.entropy_threshold) {
      entropy_lo.emplace(b_.entropy, false, params_.median);
      entropy_hi.emplace(b_.entropy, true, params_.median);
    }
    // value >= median(values with chunk `own`'s replaced by `value`), and value < the same median.
    auto at_least_median = [](MedianGate<V>& gate, Index own, const V& value) { return gate.at_least(own, value); };
    auto below_median = [](MedianGate<V>& gate, Index own, const V& value) { return !gate.at_least(own, value); };
    for (Index i = 0; i < n_chunks_; ++i) {
      const IntervalOf<V>& s = b_.score[static_cast<std::size_t>(i)];
      const IntervalOf<V>& h = b_.entropy[static_cast<std::size_t>(i)];
      Possible p;
      p.important_true = at_least_median(score_lo, i, s.hi);  // S_i >= median(S)
      p.important_false = below_median(score_hi, i, s.lo);
      if (params_.entropy_threshold) {
        V tau(*params_.entropy_threshold);
        p.spiky_true = h.lo < tau;  // H~_i < tau
        p.spiky_false = h.hi >= tau;
      } else {
        p.spiky_true = below_median(*entropy_hi, i, h.lo);
        p.spiky_false = at_least_median(*entropy_lo, i, h.hi);
      }
      poss_.push_back(p);
    }
    // Counting constraints of a median (none for the spikiness when tau is a fixed threshold).
    Index n = n_chunks_;
    if (params_.median == MedianRule::Lower) {
      min_important_ = n - (n - 1) / 2;
      max_spiky_ = (n - 1) / 2;
    } else {
      min_important_ = (n + 1) / 2;
      max_spiky_ = n / 2;
    }
    if (params_.entropy_threshold) max_spiky_ = std::numeric_limits<Index>::max() / 4;
  }

  std::vector<Index> positions(Index i, bool kept) const {
    std::vector<Index> out;
    for (Index j = chunk(i).begin; j < chunk(i).end; ++j)
      if (keep_[static_cast<std::size_t>(j)] == kept) out.push_back(j);
    return out;
  }

  std::string token(Index p) const { return "position " + std::to_string(p) + " (score " + show_interval(b_.x[static_cast<std::size_t>(p)]) + ")"; }

  // Any cut chunk, in either scenario, keeps an admissible top-k of itself.
  std::optional<Verdict> token_choice() const {
    for (Index i = 0; i < n_chunks_; ++i) {
      if (kept_[i] == 0 || kept_[i] == size(i)) continue;
      if (auto w = top_k_violation(b_.x, positions(i, true), positions(i, false)))
        return Verdict::violates("token-choice", name(i) + ": kept " + token(w->kept) + " ranks below dropped " + token(w->dropped) +
                                                     " of the same chunk");
    }
    return std::nullopt;
  }

  // Why chunk i cannot be a visited chunk that is not the last one.
  Verdict not_middle_reason(Index i) const {
    Index k = kept_[i], n = size(i);
    std::string kn = std::to_string(k) + " of " + std::to_string(n);
    if (k == n)
      return Verdict::violates("rescue", name(i) + " must be cut to its top " + std::to_string(std::min(n, r_)) +
                                             " positions but was kept whole");
    if (k == r_)
      return Verdict::violates("rescue", name(i) + " was cut to the rescue size (" + kn + ") but is not important-and-spiky");
    return Verdict::violates("whole-chunk", name(i) + " keeps " + kn + " positions: neither whole nor the rescue size " +
                                                std::to_string(r_) + ", and another chunk is where the budget ran out");
  }

  // `explain`: build the failure messages (else only the stages are right).
  Failure scenario_no_top_up(bool explain) const {
    std::vector<Choice> middle(static_cast<std::size_t>(n_chunks_)), last(static_cast<std::size_t>(n_chunks_));
    std::vector<Index> visited, unvisited, cannot_be_middle;
    const V none_below(-std::numeric_limits<double>::infinity()), none_above(std::numeric_limits<double>::infinity());
    V max_lo_unvisited = none_below;
    for (Index i = 0; i < n_chunks_; ++i) {
      const Possible& p = poss_[static_cast<std::size_t>(i)];
      Index k = kept_[i], n = size(i);
      Choice& mid = middle[static_cast<std::size_t>(i)];
      Choice& end = last[static_cast<std::size_t>(i)];
      if (k == 0) {  // unvisited: its gates are free as far as the claim goes
        mid = end = {p.gated(), p.plain(), false};
        max_lo_unvisited = greater(max_lo_unvisited, b_.score[static_cast<std::size_t>(i)].lo);
        unvisited.push_back(i);
        continue;
      }
      visited.push_back(i);
      mid = {p.gated() && k == std::min(n, r_), p.plain() && k == n, false};
      end = {p.gated() && k <= std::min(n, r_), p.plain(), false};
      if (!mid.gated_ok && !mid.plain_ok) cannot_be_middle.push_back(i);
    }
    Failure worst{0, Verdict::violates("whole-chunk", "no chunk can be the one where the budget ran out")};
    auto note = [&](int stage, auto&& message) {
      if (stage > worst.stage) worst = {stage, explain ? message() : Verdict::violates("", "")};
    };
    if (cannot_be_middle.size() >= 2) {
      // Only one chunk can be where the budget ran out; blame the higher-scoring one.
      note(1, [&] {
        Index blame = cannot_be_middle[0];
        for (Index i : cannot_be_middle)
          if (b_.score[static_cast<std::size_t>(i)].lo > b_.score[static_cast<std::size_t>(blame)].lo) blame = i;
        return not_middle_reason(blame);
      });
      return worst;
    }
    std::vector<Index> candidates = cannot_be_middle.empty() ? visited : cannot_be_middle;
    // min over visited \ {m} of the upper ends, from prefix and suffix minima over `visited` (by the value alone, so
    // near-ties among the other visited chunks cannot throw).
    const std::size_t n_visited = visited.size();
    std::vector<V> min_hi_before(n_visited + 1, none_above), min_hi_after(n_visited + 1, none_above);
    for (std::size_t t = 0; t < n_visited; ++t)
      min_hi_before[t + 1] = lesser(min_hi_before[t], b_.score[static_cast<std::size_t>(visited[t])].hi);
    for (std::size_t t = n_visited; t-- > 0;)
      min_hi_after[t] = lesser(min_hi_after[t + 1], b_.score[static_cast<std::size_t>(visited[t])].hi);
    // Which chunks those extremes are, for the messages: the weakest other visited chunk, the strongest unvisited one.
    auto weakest_visited_except = [&](Index m) {
      Index weakest = -1;
      for (Index i : visited)
        if (i != m && (weakest < 0 || b_.score[static_cast<std::size_t>(i)].hi < b_.score[static_cast<std::size_t>(weakest)].hi))
          weakest = i;
      return weakest;
    };
    auto strongest_unvisited = [&] {
      Index strongest = -1;
      for (Index i : unvisited)
        if (strongest < 0 || b_.score[static_cast<std::size_t>(i)].lo > b_.score[static_cast<std::size_t>(strongest)].lo)
          strongest = i;
      return strongest;
    };
    for (Index m : candidates) {
      const Choice& end = last[static_cast<std::size_t>(m)];
      if (!end.gated_ok && !end.plain_ok) {
        note(2, [&] {
          return Verdict::violates("rescue", name(m) + " is important-and-spiky but keeps " + std::to_string(kept_[m]) +
                                                 " > " + std::to_string(std::min(size(m), r_)) + " positions");
        });
        continue;
      }
      // Order: visited \ {m} >= m >= unvisited for some values inside the intervals.
      const IntervalOf<V>& sm = b_.score[static_cast<std::size_t>(m)];
      const auto at = static_cast<std::size_t>(std::lower_bound(visited.begin(), visited.end(), m) - visited.begin());
      V lo = greater(sm.lo, max_lo_unvisited);
      V hi = lesser(sm.hi, lesser(min_hi_before[at], min_hi_after[at + 1]));
      if (lo > hi) {
        note(3, [&] {
          Index above = weakest_visited_except(m);
          Index kept_chunk = above >= 0 && b_.score[static_cast<std::size_t>(above)].hi < sm.hi ? above : m;
          Index strongest = strongest_unvisited();
          if (strongest >= 0 && b_.score[static_cast<std::size_t>(strongest)].lo > b_.score[static_cast<std::size_t>(kept_chunk)].hi)
            return Verdict::violates("chunk-order", "dropped " + name(strongest) + " (mean " +
                                                        show_interval(b_.score[static_cast<std::size_t>(strongest)]) +
                                                        ") outranks visited " + name(kept_chunk) + " (mean " +
                                                        show_interval(b_.score[static_cast<std::size_t>(kept_chunk)]) + ")");
          return Verdict::violates("chunk-order", name(m) + " (mean " + show_interval(sm) + ") keeps " +
                                                      std::to_string(kept_[m]) + " of " + std::to_string(size(m)) +
                                                      " positions as if the budget ran out there, but it ranks above visited " +
                                                      name(above) + " (mean " +
                                                      show_interval(b_.score[static_cast<std::size_t>(above)]) + ")");
        });
        continue;
      }
      std::vector<Choice> choices = middle;
      choices[static_cast<std::size_t>(m)] = end;
      if (!counts_feasible(choices, poss_, min_important_, max_spiky_, false)) {
        note(4, [&] {
          return Verdict::violates("rescue", "no assignment of the important / spiky gates fits the claim and the medians "
                                             "(at least " + std::to_string(min_important_) + " important chunks, at most " +
                                                 std::to_string(max_spiky_) + " spiky), with " + name(m) +
                                                 " as the chunk where the budget ran out");
        });
        continue;
      }
      return {-1, Verdict::conforms()};
    }
    return worst;
  }

  // Within gated chunk i (n_i > r): some W of r kept positions is an admissible top-r of the chunk and every
  // other kept position of the chunk (a top-up pick) ranks >= every dropped position (max lower end m_d).
  bool rescue_then_top_up_ok(Index i, const V& max_dropped_lo) const {
    std::vector<Index> kept = positions(i, true), dropped = positions(i, false);
    auto lo = [](Index p) { return End{p, false}; };
    auto hi = [](Index p) { return End{p, true}; };
    const End strongest_dropped{-1, false};
    auto less = [&](End a, End b) { return compare(a, b, max_dropped_lo, /*or_equal=*/false); };
    auto less_equal = [&](End a, End b) { return compare(a, b, max_dropped_lo, /*or_equal=*/true); };
    auto cut_at = [&](Index cand) {
      const End t = hi(cand);  // t = min over W of the upper ends
      bool dropped_below = std::all_of(dropped.begin(), dropped.end(), [&](Index d) { return less_equal(lo(d), t); });
      if (!dropped_below) return false;
      Index must = 0, can = 0;
      bool conflict = false;
      for (Index p : kept) {
        bool in_w_possible = p == cand || less_equal(t, hi(p));  // t itself: no comparison of a value with itself
        bool must_be_in_w = less(t, lo(p)) || less(hi(p), strongest_dropped);  // above the cut, or too weak for the top-up
        if (must_be_in_w && !in_w_possible) conflict = true;
        must += must_be_in_w ? 1 : 0;
        can += in_w_possible ? 1 : 0;
      }
      return !conflict && must <= r_ && r_ <= can;
    };
    // Some candidate works: one decided in double settles it even if another's comparisons are undecided.
    bool undecided = false;
    for (Index cand : kept) {
      try {
        if (cut_at(cand)) return true;
      } catch (const UndecidedInDouble&) {
        undecided = true;
      }
    }
    if (undecided) throw UndecidedInDouble();
    return false;
  }

  // An end of a token value's interval, or (token -1) the largest lower end among the dropped positions.
  struct End {
    Index token;
    bool upper;
  };
  // a < b (a <= b with or_equal) between two such ends. In double enclosures a near-tie they cannot decide is decided
  // by the same two ends in 50 digits (proof 15, item 17), or throws without fifty_digit_x_.
  bool compare(End a, End b, const V& max_dropped_lo, bool or_equal) const {
    auto value = [&](End e) -> const V& {
      if (e.token < 0) return max_dropped_lo;
      const IntervalOf<V>& v = b_.x[static_cast<std::size_t>(e.token)];
      return e.upper ? v.hi : v.lo;
    };
    if constexpr (std::is_same_v<V, DoubleEnclosure>) {
      const auto decided = or_equal ? decide_less_equal(value(a), value(b)) : decide_less(value(a), value(b));
      if (decided) return *decided;
      if (fifty_digit_x_ == nullptr) throw UndecidedInDouble();
      const Real ea = fifty_digit(a), eb = fifty_digit(b);
      return or_equal ? ea <= eb : ea < eb;
    } else {
      return or_equal ? value(a) <= value(b) : value(a) < value(b);
    }
  }
  // The 50-digit value of an end: the 50-digit stage's own, max_dropped_lo folded as scenario_top_up folds it.
  Real fifty_digit(End e) const {
    if (e.token >= 0) {
      const IntervalOf<Real>& v = fifty_digit_x_->at(e.token);
      return e.upper ? v.hi : v.lo;
    }
    if (!fifty_digit_max_dropped_lo_) {
      Real m(-std::numeric_limits<double>::infinity());
      for (std::size_t j = 0; j < keep_.size(); ++j)
        if (!keep_[j]) m = greater(m, fifty_digit_x_->at(static_cast<Index>(j)).lo);
      fifty_digit_max_dropped_lo_ = m;
    }
    return *fifty_digit_max_dropped_lo_;
  }

  Failure scenario_top_up(bool explain) const {
    V max_dropped_lo(-std::numeric_limits<double>::infinity());  // the value only (greater); which one, for a message
    for (std::size_t j = 0; j < keep_.size(); ++j)
      if (!keep_[j]) max_dropped_lo = greater(max_dropped_lo, b_.x[j].lo);
    auto strongest_dropped = [&] {
      Index strongest = -1;
      for (std::size_t j = 0; j < keep_.size(); ++j)
        if (!keep_[j] && (strongest < 0 || b_.x[j].lo > b_.x[static_cast<std::size_t>(strongest)].lo))
          strongest = static_cast<Index>(j);
      return strongest;
    };
    std::vector<Choice> choices(static_cast<std::size_t>(n_chunks_));
    for (Index i = 0; i < n_chunks_; ++i) {
      const Possible& p = poss_[static_cast<std::size_t>(i)];
      Index k = kept_[i], n = size(i);
      if (k == 0)
        return {1, Verdict::violates("top-up", name(i) + " kept nothing although the walk left budget for the top-up")};
      if (k < n) {  // cut while budget remained: must be a gated chunk whose rescue the top-up extended
        if (!p.gated())
          return {2, Verdict::violates("rescue", name(i) + " was cut (" + std::to_string(k) + " of " + std::to_string(n) +
                                                     ") but is not important-and-spiky")};
        if (k < r_)
          return {2, Verdict::violates("rescue", name(i) + " keeps " + std::to_string(k) + " < rescue size " + std::to_string(r_) +
                                                     " positions although budget remained for the top-up")};
        if (!rescue_then_top_up_ok(i, max_dropped_lo)) {
          if (!explain) return {3, Verdict::violates("", "")};
          std::vector<Index> kept = positions(i, true);
          Index weakest = *std::min_element(kept.begin(), kept.end(), [&](Index a, Index c) {
            return b_.x[static_cast<std::size_t>(a)].hi < b_.x[static_cast<std::size_t>(c)].hi;
          });
          return {3, Verdict::violates("top-up", name(i) + ": beyond its top " + std::to_string(r_) + ", kept " + token(weakest) +
                                                     " cannot be a top-up pick: dropped " + token(strongest_dropped()) +
                                                     " ranks above it")};
        }
        choices[static_cast<std::size_t>(i)] = {true, false, k > r_};
      } else {
        bool gated_ok = p.gated() && (n <= r_ || rescue_then_top_up_ok(i, max_dropped_lo));
        choices[static_cast<std::size_t>(i)] = {gated_ok, p.plain(), n > r_};
      }
    }
    if (!counts_feasible(choices, poss_, min_important_, max_spiky_, true))
      return {4, Verdict::violates("rescue", "no assignment of the important / spiky gates both fits the medians and leaves budget "
                                             "for the top-up")};
    return {-1, Verdict::conforms()};
  }

  const SelectorBoundsOf<V>& b_;
  const SelectorParams& params_;
  const std::vector<bool>& keep_;
  Index r_;
  Index n_chunks_ = 0;
  std::vector<Index> kept_;
  std::vector<Possible> poss_;
  Index min_important_ = 0, max_spiky_ = 0;
  FiftyDigitTokenValues* fifty_digit_x_;
  mutable std::optional<Real> fifty_digit_max_dropped_lo_;
};

}  // namespace

template <class V>
Verdict eg_rule_check(const SelectorBoundsOf<V>& bounds, const SelectorParams& params, Index budget, const std::vector<bool>& keep,
                      FiftyDigitTokenValues* fifty_digit_x) {
  return EgChecker<V>(bounds, params, budget, keep, fifty_digit_x).run();
}

template Verdict eg_rule_check<Real>(const SelectorBoundsOf<Real>&, const SelectorParams&, Index, const std::vector<bool>&,
                                     FiftyDigitTokenValues*);
template Verdict eg_rule_check<DoubleEnclosure>(const SelectorBoundsOf<DoubleEnclosure>&, const SelectorParams&, Index,
                                                const std::vector<bool>&, FiftyDigitTokenValues*);

}  // namespace kvaudit::oracle::detail
