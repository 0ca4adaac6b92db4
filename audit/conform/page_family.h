// The Page-EntroKV family of `kvaudit conform`: one layer per request (wire format: page_case.h), judged by the
// one page checker (audit/page_check.h): the oracle's page admissibility (tie classes, walk, reserved sink pages)
// and, when the answer also lists its token sets, the exact page accounting (ledger rules).
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
#include "audit/conform/page_case.h"
#include "core/paging/page_options.h"
#include "core/paging/page_score_bound.h"

namespace kvaudit::conform {

// Verdict on an answer: the one page checker (audit/page_check.h) under the implementation's precision model
// (float32 unless the run says otherwise). Throws std::invalid_argument for a case the oracle rejects.
Verdict judge_pages(const PageCase& c, const PageAnswer& a, const paging::PrecisionModel& precision = {});

// The oracle's canonical kept pages per group, from the exact rational reference (oracle::paging).
std::vector<std::vector<Index>> canonical_pages(const PageCase& c);

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
  // choices: a preset / fixed knobs over every generated and dump case (--preset, --page-knob).
  // strict_values: replayed attention values must be float32 values (--replay-strict), else they are rounded.
  explicit PageFamily(Index max_size, paging::PrecisionModel precision = {}, std::optional<paging::PageOptions> choices = {},
                      bool strict_values = false)
      : max_size_(max_size), precision_(precision), choices_(std::move(choices)), strict_values_(strict_values) {}

  const char* name() const { return "page-entrokv"; }
  nlohmann::json report_fields() const;
  std::string encode(std::int64_t id, const Case& c) const { return encode_page_request(id, c); }
  Judgement judge(const Case& c, const std::string& response, std::int64_t id) const;
  rc::Gen<Case> generator() const;
  rc::Shrinkable<Case> concrete(Case c) const { return shrinkable_page_case(std::move(c)); }
  Case decode(const std::string& line, const std::string& source) const {
    return decode_page_request(line, source, strict_values_ ? Float32Input::Strict : Float32Input::Round);
  }
  std::vector<Case> dump_cases(const std::string& dir) const;
  nlohmann::json summary(const Case& c) const;
  nlohmann::json canonical(const Case& c) const;

 private:
  Index max_size_;
  paging::PrecisionModel precision_;  // what the implementation computes page scores in
  std::optional<paging::PageOptions> choices_;  // preset / fixed knobs over every generated and dump case
  bool strict_values_;
};

}  // namespace kvaudit::conform
