// Exhaustive oracle for docs/specification.md section 4: every contiguous m-partition (all C(n-1, m-1) boundary tuples,
// visited iteratively in lexicographic order), the feasible one (H <= R) of largest entropy.
#pragma once

#include <cstdint>

#include "oracle/partition_types.h"

namespace kvaudit::oracle {

// Default refusal threshold: at ~20 ns a tuple this is a few seconds of work.
inline constexpr double kEnumerationTupleLimit = 2e8;

// Number of tuples the enumeration would visit (sum over m for the free form), as a double (may be huge).
double enumeration_tuple_count(Index n, const std::optional<Index>& groups);

// Fixed m (problem.groups) or free form (every m in 1..n, m ascending). Exact ties keep the canonical
// partition (fewer groups, then the lexicographically smaller tuple). Throws std::invalid_argument for
// m outside [1, n] or bad probabilities, std::length_error when the tuple count exceeds `tuple_limit`.
PartitionAnswer enumerate_partitions(const PartitionProblem& problem, double tuple_limit = kEnumerationTupleLimit);

}  // namespace kvaudit::oracle
