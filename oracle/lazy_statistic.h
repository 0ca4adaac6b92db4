// The value type of the filtered canonical selection (oracle::select with Arithmetic::Filtered): a statistic of the
// exact flavour as a double enclosure of its 50-digit value, plus that 50-digit value on demand (CGAL's lazy exact
// numbers). A comparison the enclosures decide is answered in double; any other computes the two 50-digit values by
// the naive oracle's own functions (to_reals, exact_mean, precise_entropy on fixed_head_sums) and compares those, so
// the answer is always the naive one, and 50 digits are paid per undecided comparison, for the two values compared,
// not for the whole selection. Why this is the naive selection: proofs/15_filtered_admissibility.md, "Filtered
// canonical selection".
#pragma once

#include <optional>
#include <vector>

#include "oracle/chunk_internal.h"
#include "oracle/double_enclosure.h"

namespace kvaudit::oracle::detail {

// The naive oracle's 50-digit statistics of one layer, each computed on first use and kept. `scores` and `chunks`
// must outlive it. Nothing is allocated until a value is asked for: most selections decide every comparison in double.
class FiftyDigitStatistics {
 public:
  FiftyDigitStatistics(const HeadScores& scores, bool clamp, double eps, const std::vector<Chunk>& chunks)
      : scores_(scores), clamp_(clamp), eps_(eps), chunks_(chunks) {}
  FiftyDigitStatistics(const FiftyDigitStatistics&) = delete;
  FiftyDigitStatistics& operator=(const FiftyDigitStatistics&) = delete;

  const Real& token_value(Index j) { return reals()[static_cast<std::size_t>(j)]; }
  const Real& mean(Index i) {
    if (means_.empty()) means_.resize(chunks_.size());
    auto& m = means_[static_cast<std::size_t>(i)];
    if (!m) m = exact_mean(fixed(), chunks_[static_cast<std::size_t>(i)]);
    return *m;
  }
  const Real& entropy(Index i) {
    if (entropies_.empty()) entropies_.resize(chunks_.size());
    auto& h = entropies_[static_cast<std::size_t>(i)];
    if (!h) h = precise_entropy(reals(), chunks_[static_cast<std::size_t>(i)], Real(eps_));
    return *h;
  }
  // Whether any 50-digit value was needed (ArithmeticCounts::fell_back_to_50_digits).
  bool used() const { return fixed_.has_value(); }

 private:
  const std::vector<FixedPoint>& fixed() {
    if (!fixed_) fixed_ = fixed_head_sums(scores_, clamp_);
    return *fixed_;
  }
  const std::vector<Real>& reals() {
    if (!reals_) reals_ = to_reals(fixed());
    return *reals_;
  }

  const HeadScores& scores_;
  bool clamp_;
  double eps_;
  const std::vector<Chunk>& chunks_;
  std::optional<std::vector<FixedPoint>> fixed_;
  std::optional<std::vector<Real>> reals_;
  std::vector<std::optional<Real>> means_, entropies_;
};

class LazyStatistic {
 public:
  enum class Kind : unsigned char { Constant, TokenValue, Mean, Entropy, MeanOfTwo };

  LazyStatistic() = default;
  LazyStatistic(double v) : enclosure_(v), kind_(Kind::Constant), constant_(v) {}  // NOLINT: tau, a point
  LazyStatistic(DoubleEnclosure e, Kind kind, Index index, FiftyDigitStatistics* stats)
      : enclosure_(e), kind_(kind), index_(index), stats_(stats) {}
  // (a + b) / 2 as the naive median of two middles computes it.
  static LazyStatistic mean_of(const LazyStatistic& a, const LazyStatistic& b) {
    LazyStatistic m((a.enclosure_ + b.enclosure_) / 2, Kind::MeanOfTwo, 0, a.stats_ ? a.stats_ : b.stats_);
    m.operands_ = {a, b};
    return m;
  }

  const DoubleEnclosure& enclosure() const { return enclosure_; }
  Real exact() const {
    switch (kind_) {
      case Kind::Constant: return Real(constant_);
      case Kind::TokenValue: return stats_->token_value(index_);
      case Kind::Mean: return stats_->mean(index_);
      case Kind::Entropy: return stats_->entropy(index_);
      case Kind::MeanOfTwo: return (operands_[0].exact() + operands_[1].exact()) / 2;
    }
    return Real(0);
  }

  friend bool operator<(const LazyStatistic& a, const LazyStatistic& b) {
    if (const auto d = decide_less(a.enclosure_, b.enclosure_)) return *d;
    return a.exact() < b.exact();
  }
  friend bool operator<=(const LazyStatistic& a, const LazyStatistic& b) {
    if (const auto d = decide_less_equal(a.enclosure_, b.enclosure_)) return *d;
    return a.exact() <= b.exact();
  }
  friend bool operator>(const LazyStatistic& a, const LazyStatistic& b) { return b < a; }
  friend bool operator>=(const LazyStatistic& a, const LazyStatistic& b) { return b <= a; }

 private:
  DoubleEnclosure enclosure_;
  Kind kind_ = Kind::Constant;
  double constant_ = 0;
  Index index_ = 0;
  FiftyDigitStatistics* stats_ = nullptr;
  std::vector<LazyStatistic> operands_;  // MeanOfTwo only
};

}  // namespace kvaudit::oracle::detail
