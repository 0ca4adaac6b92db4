// The conform loop, written once for every family: cases in, verdicts tallied, first violation shrunk,
// protocol failures reported by kind, and (partition heuristics) the gap distribution with its worst case.
// Included by conform_run.cpp only; a family F provides (see chunk_family.h for the smallest one):
//   using Case;  const char* name() const;  nlohmann::json report_fields() const;
//   std::string encode(std::int64_t id, const Case&) const;                      (throws InputError)
//   Judgement judge(const Case&, const std::string& response, std::int64_t id) const;  (throws ProtocolError)
//   rc::Gen<Case> generator() const;  rc::Shrinkable<Case> concrete(Case) const;
//   Case decode(const std::string& line, const std::string& source) const;       (throws InputError)
//   std::vector<Case> dump_cases(const std::string& dir) const;
//   nlohmann::json summary(const Case&) const;     sizes and "origin"
//   nlohmann::json canonical(const Case&) const;   an answer the oracle accepts (its canonical one)
// and Case has a std::string member `origin` (where the case came from).
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <rapidcheck.h>

#include "audit/conform/conform_run.h"
#include "audit/conform/judge.h"
#include "audit/conform/shrinker.h"
#include "core/error.h"

namespace kvaudit::conform {
namespace driver_detail {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

inline json parsed_or_text(const std::string& line) {
  try {
    return json::parse(line);
  } catch (const json::exception&) {
    return line;
  }
}

struct Tally {
  int judged = 0, conforming = 0, violating = 0, inconclusive = 0, invalid = 0, generation_failures = 0;
  int generated = 0, from_dumps = 0, replayed = 0;
};

// Quantiles of a sorted vector (nearest rank), for the gap report.
inline json quantiles(std::vector<double> v) {
  if (v.empty()) return nullptr;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)]; };
  return {{"min", v.front()}, {"median", at(0.5)}, {"p90", at(0.9)}, {"max", v.back()}};
}

template <class F>
class Loop {
 public:
  using Case = typename F::Case;

  Loop(const F& family, const ConformOptions& o)
      : f_(family), o_(o), process_(o.impl, o.timeout_ms, o.startup_timeout_ms), judge_(f_, process_) {}

  // Returns false when the run must stop (protocol error or violation found).
  bool handle(const rc::Shrinkable<Case>& s, const std::string& label = "") {
    std::optional<Case> c;
    try {
      c = s.value();
      if (c->origin.empty()) c->origin = label;
    } catch (const rc::GenerationFailure&) {
      ++t_.generation_failures;
      return true;
    }
    Outcome out = judge_.run(*c);
    if (first_answer_seconds_ < 0) first_answer_seconds_ = seconds_since(start_);
    if (out.error) {
      protocol_error_ = json{{"kind", to_string(out.error->kind())}, {"message", out.error->what()},
                             {"request_line", out.request_line}, {"case", f_.summary(*c)}};
      return false;
    }
    if (out.invalid_case) {
      if (t_.invalid++ == 0) first_invalid_ = json{{"why", out.verdict.message}, {"case", f_.summary(*c)},
                                                   {"request_line", out.request_line}};
      return true;
    }
    ++t_.judged;
    if (out.verdict.kind == VerdictKind::Conforms) {
      ++t_.conforming;
      if (out.gap) record_gap(s, *c, out);
    } else if (out.violates()) {
      ++t_.violating;
      main_seconds_ = seconds_since(start_);
      shrink(s, *c, std::move(out));
      return false;
    } else {
      // Inconclusive, NotRun or Unsupported from the oracle: not a pass.
      if (t_.inconclusive++ == 0) {
        first_inconclusive_ = json{{"verdict", kvaudit::to_string(out.verdict.kind)}, {"why", out.verdict.message},
                                   {"case", f_.summary(*c)}, {"request_line", out.request_line}};
      }
    }
    if (t_.judged % 200 == 0) o_.progress(std::to_string(t_.judged) + " cases judged");
    return true;
  }

  ConformResult finish() {
    if (main_seconds_ < 0) main_seconds_ = seconds_since(start_);
    ConformResult r;
    json& j = r.report;
    j["command"] = "conform";
    j["method"] = f_.name();
    const json fields = f_.report_fields();  // a named value: items() of a temporary would dangle
    for (const auto& [k, v] : fields.items()) j[k] = v;
    j["impl"] = o_.impl;
    j["seed"] = o_.seed;
    j["cases_requested"] = o_.cases;
    j["max_size"] = o_.max_size > 0 ? json(o_.max_size) : json(nullptr);
    j["cases"] = {{"generated", t_.generated}, {"from_dumps", t_.from_dumps}, {"replayed", t_.replayed},
                  {"judged", t_.judged}, {"conforming", t_.conforming}, {"violating", t_.violating},
                  {"inconclusive", t_.inconclusive}, {"invalid", t_.invalid},
                  {"generation_failures", t_.generation_failures}};
    j["seconds"] = main_seconds_;
    // Throughput after the first round trip, which carries the implementation's start-up (seconds for a
    // Python adapter importing torch); first_request_seconds reports that separately.
    const double steady = main_seconds_ - std::max(first_answer_seconds_, 0.0);
    j["first_request_seconds"] = first_answer_seconds_;
    j["cases_per_second"] = t_.judged > 1 && steady > 0 ? (t_.judged - 1) / steady : 0.0;
    if (!gaps_lower_.empty() && counterexample_.is_null() && protocol_error_.is_null()) j["gap"] = gap_report();
    j["requests_sent"] = judge_.requests_sent();
    j["process_starts"] = process_.starts();
    if (!first_invalid_.is_null()) j["first_invalid"] = first_invalid_;
    if (!first_inconclusive_.is_null()) j["first_inconclusive"] = first_inconclusive_;
    if (!protocol_error_.is_null()) {
      j["verdict"] = "protocol-error";
      j["protocol_error"] = protocol_error_;
      r.exit_code = kProtocolError;
    } else if (!counterexample_.is_null()) {
      j["verdict"] = to_string(VerdictKind::Violates);
      j["counterexample"] = counterexample_;
      r.exit_code = kNonConforming;
    } else if (t_.judged == 0 || t_.inconclusive > 0 || t_.invalid > 0) {
      j["verdict"] = to_string(VerdictKind::Inconclusive);
      j["why"] = t_.judged == 0 ? "no case was judged"
                                : "some cases could not be judged; see first_inconclusive / first_invalid";
      r.exit_code = kNonConforming;
    } else {
      j["verdict"] = to_string(VerdictKind::Conforms);
      r.exit_code = kConforms;
    }
    process_.stop();
    return r;
  }

  Tally& tally() { return t_; }
  void start_clock() { start_ = Clock::now(); }

 private:
  json shrunk_json(const ShrinkResult<Case>& r, const Case& original, Clock::time_point shrink_start) {
    const Outcome& m = r.outcome;
    json canonical;
    try {
      canonical = f_.canonical(r.minimal);
    } catch (const std::exception& e) {
      canonical = std::string("oracle could not answer: ") + e.what();
    }
    json c{{"rule", m.verdict.rule},
           {"message", m.verdict.message},
           {"request_line", m.request_line},
           {"request", parsed_or_text(m.request_line)},
           {"answer", m.answer ? *m.answer : json(nullptr)},
           {"admissible_answer", canonical},
           {"original", f_.summary(original)},
           {"shrink", {{"steps", r.steps}, {"concrete_steps", r.concrete_steps}, {"candidates_tried", r.candidates_tried},
                       {"protocol_errors", r.protocol_errors}, {"first_protocol_error", r.first_protocol_error},
                       {"query_budget_exhausted", r.budget_exhausted}, {"seconds", seconds_since(shrink_start)}}}};
    const json sizes = f_.summary(r.minimal);  // a named value: items() of a temporary would dangle
    for (const auto& [k, v] : sizes.items()) c[k] = v;
    return c;
  }

  void shrink(const rc::Shrinkable<Case>& s, const Case& original, Outcome out) {
    o_.progress("violation found (" + out.verdict.rule + "); shrinking");
    const auto shrink_start = Clock::now();
    // A candidate is followed only when it breaks the same rule: the minimal case names the rule the
    // implementation was first caught on, not whatever a smaller input happens to trip over.
    const std::string rule = out.verdict.rule;
    auto same_rule = [rule](const Outcome& o) { return o.violates() && o.verdict.rule == rule; };
    ShrinkResult<Case> r = shrink_failure(s, std::move(out), judge_, o_.max_shrink_queries, same_rule);
    r.minimal.origin = original.origin + (r.steps > 0 ? " (shrunk)" : "");
    counterexample_ = shrunk_json(r, original, shrink_start);
  }

  // Heuristic answers: keep every gap interval and the case with the largest certified-below lower end.
  void record_gap(const rc::Shrinkable<Case>& s, const Case& c, const Outcome& out) {
    gaps_lower_.push_back(out.gap->lower);
    gaps_upper_.push_back(out.gap->upper);
    if (out.gap->certified) ++gaps_certified_;
    if (out.gap->lower > 0) ++suboptimal_;
    if (!worst_ || out.gap->lower > worst_outcome_.gap->lower ||
        (out.gap->lower == worst_outcome_.gap->lower && out.gap->upper > worst_outcome_.gap->upper)) {
      worst_ = s;
      worst_case_ = c;
      worst_outcome_ = out;
    }
  }

  // The gap distribution as intervals, and the worst case shrunk to the smallest case on which the answer is
  // still certifiably below the optimum (replayable like a counterexample; not a violation).
  json gap_report() {
    json g{{"cases", gaps_lower_.size()}, {"certified", gaps_certified_}, {"certified_suboptimal", suboptimal_},
           {"lower_bits", quantiles(gaps_lower_)}, {"upper_bits", quantiles(gaps_upper_)}};
    if (!worst_) return g;
    const Case& worst = *worst_case_;
    json w{{"request_line", worst_outcome_.request_line}, {"answer", *worst_outcome_.answer},
           {"gap_bits", {worst_outcome_.gap->lower, worst_outcome_.gap->upper}}, {"case", f_.summary(worst)}};
    if (worst_outcome_.gap->lower > 0) {
      const auto shrink_start = Clock::now();
      auto suboptimal = [](const Outcome& o) { return o.verdict.passed() && o.gap && o.gap->lower > 0; };
      ShrinkResult<Case> r = shrink_failure(*worst_, worst_outcome_, judge_, o_.max_shrink_queries, suboptimal);
      r.minimal.origin = worst.origin + (r.steps > 0 ? " (shrunk)" : "");
      json m = shrunk_json(r, worst, shrink_start);
      m["gap_bits"] = {r.outcome.gap->lower, r.outcome.gap->upper};
      m.erase("rule");
      m.erase("message");
      m["optimal_answer"] = m["admissible_answer"];
      m.erase("admissible_answer");
      w["shrunk"] = m;
    }
    g["worst"] = w;
    return g;
  }

  const F& f_;
  const ConformOptions& o_;
  ImplProcess process_;
  Judge<F> judge_;
  Tally t_;
  Clock::time_point start_ = Clock::now();
  double main_seconds_ = -1;
  double first_answer_seconds_ = -1;
  json protocol_error_, counterexample_, first_invalid_, first_inconclusive_;
  std::vector<double> gaps_lower_, gaps_upper_;
  int gaps_certified_ = 0, suboptimal_ = 0;
  std::optional<rc::Shrinkable<Case>> worst_;
  std::optional<Case> worst_case_;  // with its origin label (worst_->value() regenerates it without)
  Outcome worst_outcome_;
};

}  // namespace driver_detail

// Replayed requests first (alone, when given), else `cases` generated cases with sizes ramping 0..100 and
// repeating, then the dump rows.
template <class F>
ConformResult drive(const F& family, const ConformOptions& o) {
  std::vector<typename F::Case> from_dumps, replayed;
  if (!o.dumps_dir.empty()) from_dumps = family.dump_cases(o.dumps_dir);
  for (std::size_t i = 0; i < o.replay.size(); ++i) {
    replayed.push_back(family.decode(o.replay[i], "--replay line " + std::to_string(i + 1)));
  }
  if (o.cases == 0 && from_dumps.empty() && replayed.empty()) {
    throw InputError("--cases", "count", "nothing to run: 0 generated cases, no --dumps, no --replay");
  }
  driver_detail::Loop<F> loop(family, o);
  loop.start_clock();
  bool go = true;
  for (auto& c : replayed) {
    if (!go) break;
    ++loop.tally().replayed;
    go = loop.handle(family.concrete(std::move(c)));
  }
  if (replayed.empty()) {
    rc::Gen<typename F::Case> gen = family.generator();
    rc::Random random(o.seed);
    // Sizes ramp 0..100 and repeat, as RapidCheck's own runner does, so small and large cases interleave.
    for (int i = 0; go && i < o.cases; ++i) {
      rc::Random case_random = random.split();
      ++loop.tally().generated;
      try {
        go = loop.handle(gen(case_random, i % 101), "generated seed " + std::to_string(o.seed) + " case " +
                                                        std::to_string(i) + " size " + std::to_string(i % 101));
      } catch (const rc::GenerationFailure&) {
        ++loop.tally().generation_failures;
      }
    }
  }
  for (auto& c : from_dumps) {
    if (!go) break;
    ++loop.tally().from_dumps;
    go = loop.handle(family.concrete(std::move(c)));
  }
  return loop.finish();
}

}  // namespace kvaudit::conform
