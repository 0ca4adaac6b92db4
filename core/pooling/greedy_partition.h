// The seed's greedy merge heuristic for entropy-budgeted contiguous pooling (docs/specification.md section 4), made precise.
//
// Reading (docs/pooling.md, "greedy"). Start from singletons. Fixed m: perform exactly n - m adjacent merges;
// free form (no m): merge only while H > R and stop as soon as H <= R. That stop, like the returned `feasible`,
// is decided exactly: in double when the freshly summed H is farther from R than its derived rounding bound
// (final_error_bound), else by the exact sign of H - R on the rational block masses (core/exact). So a
// free-form answer is feasible whenever one group is (R >= h(total)); the merge choices themselves stay double. A merge of adjacent blocks a, b lowers
// H by Delta(a, b) = h(a) + h(b) - h(a + b) >= 0, so "overshoot" in the seed can only mean "still above R".
// With current entropy H and need = H - R, each step picks, ties toward the lowest left position:
//  (a) need <= 0 (already within budget): the merge of smallest Delta (largest resulting H; all feasible);
//  (b) need > 0 and some merge reaches H <= R: among those, the one leaving the largest H, i.e. the smallest
//      Delta >= need (the seed's rule);
//  (c) need > 0 and no single merge reaches: two-step lookahead over pairs of merges (two disjoint merges,
//      reduction Delta_j + Delta_k, or a triple merge A|B|C -> ABC). If some pair reaches H <= R, take the
//      pair leaving the largest H and apply its larger-Delta merge now (the next step then lands with rule
//      (b) at least as high). If no pair reaches, take the merge of largest Delta (steepest descent toward
//      the budget; the alternative, smallest Delta, keeps H high but can end above R with merges left).
// The exact oracle measures the gap.
// Arithmetic is double; candidates (and triple-merge reductions) are ordered sets keyed by (value, left
// position), so a step is O(log n); a rule (c) step runs the O(n log n) pair search only when the two
// largest Deltas or the largest triple could reach the budget (in practice once per row).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/types.h"

namespace kvaudit::pooling {

struct GreedyResult {
  bool feasible = false;       // final H <= R, decided exactly
  // |H - R| was within final_error_bound, so the double could not tell and `feasible` was decided by the
  // exact sign. Inputs summing to 1 - 1e-16 make this real: merging everything gives h(total) ~ 1e-16 > R = 0.
  bool near_budget = false;
  Index exact_decisions = 0;   // stop or final decisions that needed the exact sign
  std::vector<Index> cuts;     // interior boundaries b_1..b_{m-1}; group k is (b_{k-1}, b_k]
  double entropy_bits = 0.0;   // H of the returned partition, summed afresh in double
  Index merges = 0;
  Index lookahead_steps = 0;   // steps decided by rule (c)
  Index descent_steps = 0;     // rule (c) steps where no pair reached the budget
};

// Bound on |H_double - H_exact| for a partition of n inputs into `groups` blocks whose masses were summed in
// double in any order, with total mass Q: 2^-52 ((n + groups + 8) H + 2 (n + 2) Q) (docs/pooling.md, "greedy
// rounding": each block mass within (n - 1) u of its own value, which moves h(q) by at most that times
// h(q) + q log2 e, plus the oracle's bound for the fresh sum of h over faithful masses, all with u doubled).
double final_error_bound(double entropy, double total_mass, Index n, Index groups);

// Throws std::invalid_argument for m outside [1, n], negative or non-finite p.
GreedyResult greedy_partition(std::span<const double> p, std::optional<Index> groups, double budget_bits);

// Batched over rows (OpenMP), each row independent.
std::vector<GreedyResult> greedy_partition_rows(const std::vector<std::vector<double>>& rows,
                                                std::optional<Index> groups, double budget_bits);

}  // namespace kvaudit::pooling
