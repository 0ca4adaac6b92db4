// Certified incumbent bookkeeping for the partition searches (see partition_incumbent.h).
#include "oracle/partition_incumbent.h"

#include <algorithm>

namespace kvaudit::oracle {

bool Incumbent::canonical_before(const std::vector<Index>& a, const std::vector<Index>& b) const {
  if (a.size() != b.size()) return a.size() < b.size();
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
}

bool Incumbent::offer(const std::vector<Index>& bounds, double h) {
  using D = ExactPrefix::Decision;
  if (bounds == best_) return false;  // the same partition again (the DP shortcut re-offers its path)
  const Index terms = static_cast<Index>(bounds.size()) - 1;
  const double e = entropy_error_bound(h, terms);
  bool equals_budget = false;
  if (h - e > R_) return false;
  if (h + e > R_) {  // H within rounding of R: decide in extended precision
    ++extended;
    const D d = prefix_.compare_with(bounds, R_);
    if (d == D::Greater) return false;
    equals_budget = d == D::Equal;
  }
  bool take = best_.empty();
  if (!take) {
    if (h > best_h_ + e + best_err_) {
      take = true;
    } else if (h < best_h_ - e - best_err_) {
      take = false;
    } else {
      ++extended;
      const D d = prefix_.compare(bounds, best_);
      take = d == D::Greater || (d == D::Equal && canonical_before(bounds, best_));
    }
  }
  if (take) {
    best_ = bounds;
    best_h_ = h;
    best_err_ = e;
    hits_budget_ = equals_budget;
  }
  return take;
}

void Incumbent::fill(PartitionAnswer& out) const {
  out.feasible = has();
  out.cuts.clear();
  out.masses.clear();
  if (!has()) return;
  out.cuts.assign(best_.begin() + 1, best_.end() - 1);
  for (std::size_t k = 1; k < best_.size(); ++k) out.masses.push_back(prefix_.mass(best_[k - 1], best_[k]));
  out.entropy_bits = prefix_.entropy_extended(best_);
}

}  // namespace kvaudit::oracle
