// RapidCheck generators of ChunkKV / EG-ChunkKV cases (scores + parameters) that reach the corners: tiny and
// long contexts, chunk-boundary lengths, T < c, one-token tails, c = 1 and r >= c (exact flavour), decimal
// ratios, thresholds 0 / 1 / none, negative scores, 1-8 heads and heavy ties (bf16 values, small pools,
// exact zeros, all-zero chunks). Used by the property suites and by `kvaudit conform`.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "core/types.h"

namespace kvaudit::audit {

struct SelectorCase {
  std::vector<std::vector<float>> scores;  // heads x T, every row the same length
  SelectorParams params;
  std::string kind;  // how the values were drawn ("pool", "bf16", ...), for RC_CLASSIFY

  Index heads() const { return static_cast<Index>(scores.size()); }
  Index tokens() const { return scores.empty() ? 0 : static_cast<Index>(scores[0].size()); }
};

// Row-major (heads, T) copy of the scores: the storage a HeadScores view borrows.
std::vector<float> flatten(const SelectorCase& c);
// A view of `storage` (which must be flatten(c) and outlive the view).
HeadScores head_scores(const SelectorCase& c, const std::vector<float>& storage);

struct CaseOptions {
  Method method = Method::EgChunkKV;
  Flavour flavour = Flavour::Kvpress;
  Index max_tokens = 4000;   // long contexts are drawn rarely; property suites lower this for speed
  Index max_heads = 8;
  bool non_negative = false;  // only scores >= 0 (where the two flavours are specified to agree)
};

// Parameters valid for options.flavour: the kvpress flavour of EG-ChunkKV always gets 1 <= r < c and no
// threshold / mean-of-middles median; the exact flavour also gets c = 1, r >= c, thresholds 0 / 1 / random.
rc::Gen<SelectorParams> gen_selector_params(const CaseOptions& options);
// A decimal ratio: the grid 0.05 .. 0.95 (and 0) or a random decimal with 1-3 digits; text and value agree.
rc::Gen<CompressionRatio> gen_ratio();
// Token counts weighted toward small values and multiples of c plus or minus one.
rc::Gen<Index> gen_tokens(Index chunk_length, Index max_tokens);
// A whole case. Shrinks toward fewer tokens, fewer heads and fewer distinct values.
rc::Gen<SelectorCase> gen_selector_case(const CaseOptions& options);

// Prints the case compactly so a failing property shows a reproducible input.
void showValue(const SelectorCase& c, std::ostream& os);

}  // namespace kvaudit::audit
