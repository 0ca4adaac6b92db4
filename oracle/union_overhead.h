// Reference union overhead of head-independent eviction under GQA (docs/specification.md section 5): per-head top-k sets,
// |U| / k at token and page level, the two-head identity and Bonferroni bounds, in exact integer/rational
// arithmetic (Boost cpp_rational).
#pragma once

#include <span>
#include <vector>

#include <boost/multiprecision/cpp_int.hpp>

#include "core/types.h"
#include "core/verdict.h"
#include "oracle/page_params.h"

namespace kvaudit::oracle::paging {

using Ratio = boost::multiprecision::cpp_rational;

// The k largest values of `row` by (value desc, index asc), as increasing positions. k is clamped to
// [0, T]. This is what one head keeps when it evicts on its own scores.
Positions head_top_k(std::span<const float> row, Index k);

// The head's own page scores (sum or max of its raw row over each page of size P), and its top
// `k_pages` pages by (score desc, page index asc), increasing. Page-granular head-independent eviction.
std::vector<Index> head_top_pages(std::span<const float> row, Index page_size, Index k_pages, PageScore kind);

// Page budget used for the page-level ratio: max(1, floor(k / P)) pages, so that every head keeps the same
// number of pages and the identities below hold verbatim. (A head cannot keep the partial last page
// "for free": that would make per-head page counts differ and the ratio no longer a clean |U| / k.)
Index page_level_k(Index token_budget, Index page_size);

// Everything about the union of G sets, each of size k (distinct elements within a set).
struct UnionOverhead {
  Index g = 0;                    // number of sets
  Index k = 0;                    // the common set size
  Index union_size = 0;           // |U|
  Ratio ratio;                    // |U| / k
  Index s1 = 0, s2 = 0, s3 = 0;   // sum |S_i|, sum_{i<j} |S_i ∩ S_j|, sum_{i<j<l} |S_i ∩ S_j ∩ S_l|
  Index bonferroni_lower = 0;     // s1 - s2 <= |U|
  Index bonferroni_upper = 0;     // |U| <= s1 - s2 + s3
  Index inclusion_exclusion = -1; // the full alternating sum over every non-empty subset (G <= 16), else -1
  Index min_pairwise_intersection = 0;  // for the two-head identity
};

// Throws std::invalid_argument if the sets differ in size, repeat elements, or k == 0.
UnionOverhead union_overhead(const std::vector<std::vector<Index>>& sets);

// Token level: each head of one group keeps head_top_k(row, k).
UnionOverhead token_union_overhead(const std::vector<std::span<const float>>& rows, Index k);
// Page level: each head keeps head_top_pages(row, P, page_level_k(k, P), kind).
UnionOverhead page_union_overhead(const std::vector<std::span<const float>>& rows, Index k, Index page_size, PageScore kind);

// Checks, in order: "range" 1 <= |U|/k <= G; "bonferroni" s1 - s2 <= |U| <= s1 - s2 + s3 and |U| <= s1;
// "inclusion-exclusion" the full alternating sum equals |U| (when computed); "two-head" for G == 2,
// |U|/k == 2 - |S_1 ∩ S_2|/k.
Verdict check_union_identities(const UnionOverhead& u);

}  // namespace kvaudit::oracle::paging
