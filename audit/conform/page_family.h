// The Page-EntroKV family of `kvaudit conform`: one layer per request, kept pages per KV group, judged by
// the oracle's page admissibility (oracle/page_entrokv.h: tie classes, walk, reserved sink pages) and, when
// the answer also lists its token sets, the exact page accounting (ledger rules).
//
// Request  {"id": 3, "method": "page-entrokv", "attention": [[...T floats...], ...q_heads], "group_size": 6,
//           "page_size": 16, "compression_ratio": "0.8", "sinks": 4, "pooling": "entropy", "page_score": "sum",
//           "source": "sink-isolated", "sink_pages": "reserved", "greedy": "skip-misfits"}
// Response {"id": 3, "kept_pages": [[0, 3, 5], [0, 1, 7]]}          one sorted list per KV group
//          optional "kept_tokens": [[...], [...]]                    the positions each group retains
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <rapidcheck.h>

#include "audit/conform/judge.h"
#include "core/verdict.h"
#include "oracle/page_params.h"

namespace kvaudit::conform {

// One layer: q_heads rows of T attention values (head h in KV group h / G) and every Page-EntroKV knob.
struct PageCase {
  Index q_heads = 0;
  Index tokens = 0;
  std::vector<float> values;  // row-major (q_heads, tokens), each row non-negative (a distribution)
  oracle::paging::PageParams params;
  std::string origin;

  Index groups() const { return params.group_size > 0 ? q_heads / params.group_size : 0; }
  std::span<const float> row(Index h) const {
    return {values.data() + h * tokens, static_cast<std::size_t>(tokens)};
  }
};

struct PageAnswer {
  std::vector<std::vector<Index>> kept_pages;                    // per KV group, as sent
  std::optional<std::vector<std::vector<Index>>> kept_tokens;    // per KV group, when sent
};

// ---- The checker: pure functions, shared by the CLI, the tests, the benchmark and any other front end ----

// Relative error bound of page_scores_double: n u / (1 - n u), n = 7T + 2G + P + 16, u = 2^-53 (the chain
// Z, p~, sum p~^2, sum c, w, w p~, s(t), page sum; every term non-negative, so relative errors add; the same
// derivation as core/paging/page_selector.h, for this file's own transcription).
double page_judge_error_bound(Index tokens, Index group_size, Index page_size);

// The tie tolerance granted to the implementation: the same chain evaluated in float32 (u = 2^-24) with 16
// extra roundings for exp/log or a different association, n = 7T + 2G + P + 32. Pages whose exact scores
// differ by at most this relative amount may come out in either order. An implementation in float64 is far
// inside it; one in float32 stays inside it unless its page scores are subnormal (documented limitation).
double page_impl_tolerance(Index tokens, Index group_size, Index page_size);

// Page scores of KV group g in double, transcribing the oracle's definitions in its order of operations.
// raw_weights: the collision probabilities of the raw rows instead of p~ (used only to name a mistake).
std::vector<double> page_scores_double(const PageCase& c, Index group, const oracle::paging::PageParams& params,
                                       bool raw_weights = false);

// Verdict on an answer. Throws std::invalid_argument for a case the oracle rejects (G not dividing the heads,
// P < 1, a bad ratio, negative or non-finite values). Rules, in the order checked: "shape" (one list per
// group), "range", "order" (strictly increasing), the ledger rules when kept_tokens is present ("token-set",
// "pages-agree", "tokens-agree", "whole-pages", "budget"), then per group "budget", "reserved" and the walk:
// "budget" (the float budget) / "weights" / "sink-isolation" / "page-score" / "walk" (the other greedy rule)
// when the pages are what that mistake keeps (the message lists every mistake that fits), else "tie-order"
// or "reserved".
// Tie classes are taken on double page scores with the tolerance page_impl_tolerance widened by three times
// page_judge_error_bound: never stricter than the exact classes at that tolerance (docs/conform.md).
Verdict judge_pages(const PageCase& c, const PageAnswer& a);

// The oracle's canonical kept pages per group, from the exact rational reference (oracle::paging).
std::vector<std::vector<Index>> canonical_pages(const PageCase& c);

// ---- Wire format --------------------------------------------------------------------------------------
std::string encode_page_request(std::int64_t id, const PageCase& c);
// Throws InputError naming `source`. compression_ratio may be decimal text or a number (its raw text is kept).
PageCase decode_page_request(const std::string& line, const std::string& source);
// Throws ProtocolError (BadJson, WrongId, BadResponse); never judges the pages themselves.
PageAnswer decode_page_response(const std::string& line, std::int64_t expected_id);

// ---- Cases ----------------------------------------------------------------------------------------------
// Generated cases: heavy ties, one-hot and sink-dominated heads, rows without non-sink mass, partial last
// pages, P = 1 and P >= T, G from 1 to 8, dyadic and decimal ratios, every knob; T <= max_size when > 0.
rc::Gen<PageCase> page_cases(Index max_size);
// One case per (prompt, layer, ratio 0.5 / 0.8 / 0.9) of attention.window_mean; rows cut to max_size tokens
// (and renormalized) when max_size > 0.
std::vector<PageCase> page_dump_cases(const std::string& dir, Index max_size);
// Concrete shrinks: drop a group, drop a head of every group, keep a prefix (rows renormalized), remove a page,
// quantize the rows, smaller P, fewer sinks, ratio 0.5.
rc::Shrinkable<PageCase> shrinkable_page_case(PageCase c);

class PageFamily {
 public:
  using Case = PageCase;
  explicit PageFamily(Index max_size) : max_size_(max_size) {}

  const char* name() const { return "page-entrokv"; }
  nlohmann::json report_fields() const { return nlohmann::json::object(); }
  std::string encode(std::int64_t id, const Case& c) const { return encode_page_request(id, c); }
  Judgement judge(const Case& c, const std::string& response, std::int64_t id) const;
  rc::Gen<Case> generator() const { return page_cases(max_size_); }
  rc::Shrinkable<Case> concrete(Case c) const { return shrinkable_page_case(std::move(c)); }
  Case decode(const std::string& line, const std::string& source) const { return decode_page_request(line, source); }
  std::vector<Case> dump_cases(const std::string& dir) const { return page_dump_cases(dir, max_size_); }
  nlohmann::json summary(const Case& c) const;
  nlohmann::json canonical(const Case& c) const;

 private:
  Index max_size_;
};

}  // namespace kvaudit::conform
