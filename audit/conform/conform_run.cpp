// The conform loop: cases in, verdicts tallied, first violation shrunk, protocol failures reported by kind.
#include "audit/conform/conform_run.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>

#include <rapidcheck.h>

#include "audit/conform/case_sources.h"
#include "audit/conform/judge.h"
#include "audit/conform/shrinker.h"
#include "core/error.h"
#include "core/io/dump.h"
#include "oracle/chunk_selection.h"

namespace kvaudit::conform {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

json case_summary(const ConformCase& c) { return {{"heads", c.heads}, {"tokens", c.tokens}, {"origin", c.origin}}; }

json parsed_or_text(const std::string& line) {
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

class Loop {
 public:
  explicit Loop(const ConformOptions& o) : o_(o), process_(o.impl, o.timeout_ms, o.startup_timeout_ms), judge_(process_) {}

  // Returns false when the run must stop (protocol error or violation found).
  bool handle(const rc::Shrinkable<ConformCase>& s, const std::string& label = "") {
    std::optional<ConformCase> c;
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
                             {"request_line", out.request_line}, {"case", case_summary(*c)}};
      return false;
    }
    if (out.invalid_case) {
      if (t_.invalid++ == 0) first_invalid_ = json{{"why", out.verdict.message}, {"case", case_summary(*c)},
                                                   {"request_line", out.request_line}};
      return true;
    }
    ++t_.judged;
    if (out.verdict.kind == VerdictKind::Conforms) {
      ++t_.conforming;
    } else if (out.violates()) {
      ++t_.violating;
      main_seconds_ = seconds_since(start_);
      shrink(s, *c, std::move(out));
      return false;
    } else {
      // Inconclusive (tie search over its limit), NotRun or Unsupported from the oracle: not a pass.
      if (t_.inconclusive++ == 0) {
        first_inconclusive_ = json{{"verdict", kvaudit::to_string(out.verdict.kind)}, {"why", out.verdict.message},
                                   {"case", case_summary(*c)}, {"request_line", out.request_line}};
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
    j["method"] = method_name(o_.method);
    j["flavour"] = o_.flavour == Flavour::Kvpress ? "kvpress" : "exact";
    j["impl"] = o_.impl;
    j["seed"] = o_.seed;
    j["cases_requested"] = o_.cases;
    j["cases"] = {{"generated", t_.generated}, {"from_dumps", t_.from_dumps}, {"replayed", t_.replayed},
                  {"judged", t_.judged}, {"conforming", t_.conforming}, {"violating", t_.violating},
                  {"inconclusive", t_.inconclusive}, {"invalid", t_.invalid},
                  {"generation_failures", t_.generation_failures}};
    j["seconds"] = main_seconds_;
    // Throughput after the first round trip, which carries the implementation's start-up (seconds for a
    // Python adapter importing torch); first_request_seconds reports that separately.
    double steady = main_seconds_ - std::max(first_answer_seconds_, 0.0);
    j["first_request_seconds"] = first_answer_seconds_;
    j["cases_per_second"] = t_.judged > 1 && steady > 0 ? (t_.judged - 1) / steady : 0.0;
    j["requests_sent"] = judge_.requests_sent();
    j["process_starts"] = process_.starts();
    if (!first_invalid_.is_null()) j["first_invalid"] = first_invalid_;
    if (!first_inconclusive_.is_null()) j["first_inconclusive"] = first_inconclusive_;
    if (!protocol_error_.is_null()) {
      j["verdict"] = "protocol-error";
      j["protocol_error"] = protocol_error_;
      r.exit_code = kProtocolError;
    } else if (!counterexample_.is_null()) {
      j["verdict"] = "violates";
      j["counterexample"] = counterexample_;
      r.exit_code = kNonConforming;
    } else if (t_.judged == 0 || t_.inconclusive > 0 || t_.invalid > 0) {
      j["verdict"] = "inconclusive";
      j["why"] = t_.judged == 0 ? "no case was judged" : "some cases could not be judged; see first_inconclusive / first_invalid";
      r.exit_code = kNonConforming;
    } else {
      j["verdict"] = "conforms";
      r.exit_code = kConforms;
    }
    process_.stop();
    return r;
  }

  Tally& tally() { return t_; }
  void start_clock() { start_ = Clock::now(); }

 private:
  void shrink(const rc::Shrinkable<ConformCase>& s, const ConformCase& original, Outcome out) {
    o_.progress("violation found (" + out.verdict.rule + "); shrinking");
    auto shrink_start = Clock::now();
    ShrinkResult r = shrink_failure(s, std::move(out), judge_, o_.max_shrink_queries);
    r.minimal.origin = original.origin + (r.steps > 0 ? " (shrunk)" : "");
    const Outcome& m = r.outcome;
    json admissible;
    try {
      admissible = selection_json(oracle::select(r.minimal.view(), r.minimal.params));
    } catch (const std::exception& e) {
      admissible = std::string("oracle could not select: ") + e.what();
    }
    counterexample_ = json{
        {"rule", m.verdict.rule},
        {"message", m.verdict.message},
        {"request_line", m.request_line},
        {"request", parsed_or_text(m.request_line)},
        {"answer", selection_json(*m.answer)},
        {"admissible_answer", admissible},
        {"heads", r.minimal.heads},
        {"tokens", r.minimal.tokens},
        {"origin", r.minimal.origin},
        {"original", case_summary(original)},
        {"shrink", {{"steps", r.steps}, {"concrete_steps", r.concrete_steps}, {"candidates_tried", r.candidates_tried},
                    {"protocol_errors", r.protocol_errors}, {"first_protocol_error", r.first_protocol_error},
                    {"query_budget_exhausted", r.budget_exhausted}, {"seconds", seconds_since(shrink_start)}}}};
  }

  const ConformOptions& o_;
  ImplProcess process_;
  Judge judge_;
  Tally t_;
  Clock::time_point start_ = Clock::now();
  double main_seconds_ = -1;
  double first_answer_seconds_ = -1;
  json protocol_error_, counterexample_, first_invalid_, first_inconclusive_;
};

}  // namespace

ConformResult run_conform(const ConformOptions& o) {
  if (o.impl.empty()) throw InputError("--impl", "command", "empty");
  if (o.cases < 0) throw InputError("--cases", "count", "must be >= 0");
  if (o.timeout_ms < 1) throw InputError("--timeout-ms", "milliseconds", "must be >= 1");
  if (o.startup_timeout_ms < 1) throw InputError("--startup-timeout-ms", "milliseconds", "must be >= 1");
  std::vector<ConformCase> from_dumps, replayed;
  if (!o.dumps_dir.empty()) from_dumps = dump_cases(io::load_dumps(o.dumps_dir), o.method, o.flavour);
  for (std::size_t i = 0; i < o.replay.size(); ++i) {
    replayed.push_back(decode_request(o.replay[i], o.flavour, "--replay line " + std::to_string(i + 1)));
  }
  if (o.cases == 0 && from_dumps.empty() && replayed.empty()) {
    throw InputError("--cases", "count", "nothing to run: 0 generated cases, no --dumps, no --replay");
  }

  Loop loop(o);
  loop.start_clock();
  bool go = true;
  for (auto& c : replayed) {
    if (!go) break;
    ++loop.tally().replayed;
    go = loop.handle(shrinkable_concrete(std::move(c)));
  }
  if (replayed.empty()) {
    rc::Gen<ConformCase> gen = generated_cases(o.method, o.flavour);
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
    go = loop.handle(shrinkable_concrete(std::move(c)));
  }
  return loop.finish();
}

}  // namespace kvaudit::conform
