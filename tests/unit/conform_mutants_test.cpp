// Mutation testing of `kvaudit conform`: deliberately wrong ChunkKV / EG-ChunkKV implementations
// (tests/mutants/selector_impl.py, one rule of SPEC.md broken each) must be killed with a shrunk, replayable
// counterexample; implementations right in unusual ways must pass. Reports the mutation score.
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/unit/conform_run_support.h"

using conform_test::quote;
using conform_test::run_cli;

namespace {

struct Mutant {
  const char* method;
  const char* flavour;
  const char* name;  // "" = the plain reference transcription
  bool wrong;        // must be killed (true) or must pass (false)
};

// One entry per rule of the spec, per method; see MUTANTS / RIGHT in tests/mutants/selector_impl.py.
const std::vector<Mutant> kMutants = {
    // EG-ChunkKV, kvpress flavour
    {"eg-chunkkv", "kvpress", "budget_off_by_one", true},
    {"eg-chunkkv", "kvpress", "budget_exact", true},
    {"eg-chunkkv", "kvpress", "partial_dropped", true},
    {"eg-chunkkv", "kvpress", "partial_merged", true},
    {"eg-chunkkv", "kvpress", "heads_max", true},
    {"eg-chunkkv", "kvpress", "heads_first", true},
    {"eg-chunkkv", "kvpress", "stat_sum", true},
    {"eg-chunkkv", "kvpress", "median_upper", true},
    {"eg-chunkkv", "kvpress", "median_mean", true},
    {"eg-chunkkv", "kvpress", "entropy_log2", true},
    {"eg-chunkkv", "kvpress", "entropy_partial_norm", true},
    {"eg-chunkkv", "kvpress", "entropy_no_rebase", true},
    {"eg-chunkkv", "kvpress", "entropy_clamp", true},
    {"eg-chunkkv", "kvpress", "gate_important_strict", true},
    {"eg-chunkkv", "kvpress", "gate_spiky_le", true},
    {"eg-chunkkv", "kvpress", "walk_ascending", true},
    {"eg-chunkkv", "kvpress", "walk_no_truncate", true},
    {"eg-chunkkv", "kvpress", "rescue_plus_one", true},
    {"eg-chunkkv", "kvpress", "rescue_ignored", true},
    {"eg-chunkkv", "kvpress", "rescue_lowest", true},
    {"eg-chunkkv", "kvpress", "topup_missing", true},
    {"eg-chunkkv", "kvpress", "topup_lowest", true},
    {"eg-chunkkv", "kvpress", "unsorted", true},
    {"eg-chunkkv", "kvpress", "", false},
    {"eg-chunkkv", "kvpress", "ties_high", false},
    {"eg-chunkkv", "kvpress", "float64", false},
    // EG-ChunkKV, exact flavour (seeds: clamped scores, exact budget, free rescue size, fixed thresholds)
    {"eg-chunkkv", "exact", "budget_float", true},
    {"eg-chunkkv", "exact", "budget_off_by_one", true},
    {"eg-chunkkv", "exact", "gate_spiky_le", true},
    {"eg-chunkkv", "exact", "median_upper", true},
    {"eg-chunkkv", "exact", "entropy_log2", true},
    {"eg-chunkkv", "exact", "", false},
    {"eg-chunkkv", "exact", "ties_high", false},
    {"eg-chunkkv", "exact", "float64", false},
    // ChunkKV, kvpress flavour
    {"chunkkv", "kvpress", "budget_off_by_one", true},
    {"chunkkv", "kvpress", "budget_exact", true},
    {"chunkkv", "kvpress", "partial_dropped", true},
    {"chunkkv", "kvpress", "partial_merged", true},
    {"chunkkv", "kvpress", "heads_max", true},
    {"chunkkv", "kvpress", "heads_first", true},
    {"chunkkv", "kvpress", "stat_sum", true},
    {"chunkkv", "kvpress", "walk_ascending", true},
    {"chunkkv", "kvpress", "unsorted", true},
    {"chunkkv", "kvpress", "fallback_shared", true},
    {"chunkkv", "kvpress", "", false},
    {"chunkkv", "kvpress", "ties_high", false},
    {"chunkkv", "kvpress", "float64", false},
    // ChunkKV, exact flavour
    {"chunkkv", "exact", "budget_float", true},
    {"chunkkv", "exact", "", false},
    {"chunkkv", "exact", "ties_high", false},
};

constexpr int kCasesWrong = 600;  // a wrong implementation must die within this many generated cases
constexpr int kCasesRight = 300;  // a right one must survive this many
constexpr int kSeed = 1;

std::string impl_command(const Mutant& m) {
  std::string cmd = "python3 tests/mutants/selector_impl.py --flavour " + std::string(m.flavour);
  if (*m.name) cmd += " --mutant " + std::string(m.name);
  return cmd;
}

std::string conform_args(const Mutant& m, int cases) {
  return "--method " + std::string(m.method) + " --flavour " + m.flavour + " --cases " + std::to_string(cases) +
         " --seed " + std::to_string(kSeed) + " --impl " + quote(impl_command(m));
}

bool python_available() { return std::system("python3 -c 'import json, fractions, struct' >/dev/null 2>&1") == 0; }

// The shrunk request, replayed: the mutant must still violate on it and the reference must conform.
void expect_replayable(const Mutant& m, const std::string& request_line) {
  std::string path = "/tmp/kvaudit_conform_replay_" + std::to_string(::getpid()) + ".jsonl";
  std::ofstream(path) << request_line << "\n";
  std::string base = "--method " + std::string(m.method) + " --flavour " + m.flavour + " --replay " + path + " --impl ";
  auto again = run_cli(base + quote(impl_command(m)));
  EXPECT_EQ(again.exit_code, 1) << m.name << ": replaying the counterexample did not violate: " << again.err;
  Mutant reference{m.method, m.flavour, "", false};
  auto ref = run_cli(base + quote(impl_command(reference)));
  EXPECT_EQ(ref.exit_code, 0) << m.name << ": the reference does not conform on the counterexample: " << ref.err;
  std::remove(path.c_str());
}

}  // namespace

TEST(ConformMutants, EveryWrongImplementationIsKilledAndEveryRightOnePasses) {
  if (!python_available()) GTEST_SKIP() << "SKIPPED: python3 (stdlib) is needed to run the mutants";
  int wrong = 0, killed = 0, right = 0, passed = 0;
  std::ostringstream table;
  table << std::left << std::setw(11) << "method" << std::setw(8) << "flavour" << std::setw(23) << "mutant"
        << std::setw(10) << "expected" << std::setw(15) << "verdict" << std::setw(7) << "cases" << std::setw(15)
        << "rule" << "shrunk (heads x T), queries\n";
  for (const auto& m : kMutants) {
    auto r = run_cli(conform_args(m, m.wrong ? kCasesWrong : kCasesRight));
    ASSERT_TRUE(r.report.is_object()) << m.name << ": no JSON report; stderr: " << r.err;
    std::string verdict = r.report["verdict"];
    int judged = r.report["cases"]["judged"];
    std::string rule = "-", shrunk = "-";
    if (r.report.contains("counterexample")) {
      const auto& c = r.report["counterexample"];
      rule = c["rule"];
      shrunk = std::to_string(c["heads"].get<int>()) + " x " + std::to_string(c["tokens"].get<int>()) + ", " +
               std::to_string(c["shrink"]["candidates_tried"].get<int>());
    }
    table << std::left << std::setw(11) << m.method << std::setw(8) << m.flavour << std::setw(23)
          << (*m.name ? m.name : "(reference)") << std::setw(10) << (m.wrong ? "killed" : "passes") << std::setw(15)
          << verdict << std::setw(7) << judged << std::setw(15) << rule << shrunk << "\n";
    if (m.wrong) {
      ++wrong;
      // Killed means a violation the oracle names (exit 1), never a crash or an inconclusive run.
      bool is_killed = r.exit_code == 1 && verdict == "violates";
      killed += is_killed;
      EXPECT_TRUE(is_killed) << m.method << "/" << m.flavour << "/" << m.name << " SURVIVED (" << verdict
                             << ", exit " << r.exit_code << "): a corner the generators miss; stderr: " << r.err;
      if (is_killed) {
        const auto& c = r.report["counterexample"];
        EXPECT_NE(c["answer"], c["admissible_answer"]) << m.name;
        EXPECT_LE(c["tokens"].get<int>(), r.report["counterexample"]["original"]["tokens"].get<int>());
        expect_replayable(m, c["request_line"]);
      }
    } else {
      ++right;
      bool ok = r.exit_code == 0 && verdict == "conforms" && judged == kCasesRight;
      passed += ok;
      EXPECT_TRUE(ok) << m.method << "/" << m.flavour << "/" << (*m.name ? m.name : "(reference)")
                      << " is right but was rejected (" << verdict << "): " << r.err << "\n" << r.out;
    }
  }
  std::cout << table.str();
  std::cout << "mutation score: " << killed << "/" << wrong << " wrong implementations killed; " << passed << "/"
            << right << " right implementations passed\n";
  EXPECT_GE(wrong, 20);
}
