// Every choice of the Page-EntroKV formalization (SPEC.md section 5) as a named parameter of the oracle.
// Defaults are the ones documented in docs/page-entrokv.md; core/paging keeps its own copy of these
// plain structs on purpose (the optimized code must not include the reference).
#pragma once

#include <string>

#include "core/types.h"

namespace kvaudit::oracle::paging {

// How the heads of one KV group are weighted before pooling.
enum class Pooling {
  Entropy,  // w_h proportional to exp(-H2(p~_h)) = sum_t p~_h(t)^2 (the collision probability)
  Mean,     // w_h = 1/G (what SnapKV-style scorers do): the baseline
};

// What is pooled: s_g(t) = sum_h w_h d_h(t) with d_h = p~_h (sink-isolated, renormalized; default) or the
// raw p_h. Raw pooling lets the sinks' mass (often > 50 %) ride along into page 0, and mixes weights
// computed on p~ with scores computed on p, so the default pools p~ and handles the sinks by SinkPages.
enum class PoolSource { SinkIsolated, Raw };

// Page score: sum or max of the pooled token scores over the page's positions.
enum class PageScore { Sum, Max };

// What happens to the pages holding the first n_sink positions.
enum class SinkPages {
  Reserved,  // kept before any scored page, while they fit in the budget (attention sinks must stay)
  Scored,    // compete like any page (with PoolSource::SinkIsolated the sink positions then score 0)
};

// The greedy walk over pages in (score desc, page index asc) order.
enum class GreedyRule {
  SkipMisfits,        // a page that does not fit is skipped and the walk goes on (default: only the partial
                      // last page can fit after a full page did not, so this is "stop, then maybe the tail")
  StopAtFirstMisfit,  // the kept pages are a prefix of the order
};

struct PageParams {
  Index group_size = 3;          // G: query heads per KV head; head h belongs to group h / G (HF repeat_kv)
  Index page_size = 16;          // P
  std::string ratio_text = "0.8";  // rho as the user wrote it; the budget is read exactly from this text
  Index n_sink = 4;
  Pooling pooling = Pooling::Entropy;
  PoolSource source = PoolSource::SinkIsolated;
  PageScore page_score = PageScore::Sum;
  SinkPages sink_pages = SinkPages::Reserved;
  GreedyRule greedy = GreedyRule::SkipMisfits;
};

const char* to_string(Pooling p);
const char* to_string(PoolSource p);
const char* to_string(PageScore p);
const char* to_string(SinkPages p);
const char* to_string(GreedyRule p);

}  // namespace kvaudit::oracle::paging
