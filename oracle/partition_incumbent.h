// The best-so-far partition of a search, with every feasibility and comparison decision exact: decided in
// double when the gap exceeds the derived rounding bound, else re-decided exactly (ExactPrefix).
#pragma once

#include <vector>

#include "oracle/partition_arith.h"
#include "oracle/partition_types.h"

namespace kvaudit::oracle {

class Incumbent {
 public:
  Incumbent(const ExactPrefix& prefix, double R) : prefix_(prefix), R_(R) {}

  // Offers a candidate (full bounds 0..n) whose double-evaluated entropy is `h`. Keeps it when it is
  // feasible (H <= R) and better than the incumbent; exact ties keep the canonical partition: fewer groups
  // first, then the lexicographically smaller boundary tuple. Returns true when it became the incumbent.
  bool offer(const std::vector<Index>& bounds, double h);

  bool has() const { return !best_.empty(); }
  double value() const { return best_h_; }
  // A certified lower bound on the incumbent's exact entropy.
  double lower() const { return best_h_ - best_err_; }
  const std::vector<Index>& bounds() const { return best_; }
  // The incumbent is certified to equal R exactly (nothing feasible can be larger).
  bool hits_budget() const { return hits_budget_; }

  std::int64_t extended = 0;   // decisions re-done exactly because double could not tell

  // Fills solver-independent fields of an answer from the incumbent (feasible, cuts, masses, entropy).
  void fill(PartitionAnswer& out) const;

 private:
  bool canonical_before(const std::vector<Index>& a, const std::vector<Index>& b) const;
  const ExactPrefix& prefix_;
  double R_;
  std::vector<Index> best_;
  double best_h_ = 0.0, best_err_ = 0.0;
  bool hits_budget_ = false;
};

}  // namespace kvaudit::oracle
