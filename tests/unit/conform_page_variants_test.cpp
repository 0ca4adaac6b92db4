// `kvaudit conform --method page-entrokv` with the published variants sent (--preset, --page-knob;
// docs/page-entrokv.md section 8): mutants breaking the temperature or the budget unit are killed with the rules
// `temperature` and `page-count-budget`; the reference under each preset, and the local adapter of the authors'
// released pooler (tools/adapters/pageentro_released_adapter.py) under `--preset released`, conform on generated
// cases and on real dump rows; kvaudit's default kills that adapter with named rules. Prints the table the docs cite.
#include <algorithm>
#include <cstdlib>
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

const char* kPageImpl = "python3 tests/mutants/page_impl.py";
const char* kReleased = "python3 tools/adapters/pageentro_released_adapter.py";

// A wrong implementation must be killed with a named rule (never `tie-order`), and the counterexample's message,
// which lists every known mistake whose pages the claim is, must name its own cause (`explains`). The first
// mistake that fits gives the rule: on a small shrunk case another single-knob mistake can keep the same pages (a
// stop-at-first-misfit walk keeps the top floor(B / P) pages, as a page count does), so the rule alone may be
// that other one.
struct Run {
  const char* impl;
  const char* mutant;    // "" = none
  const char* knobs;     // --preset / --page-knob arguments
  bool wrong;
  const char* explains;  // wrong: text the counterexample's message must hold ("" = any named rule)
};

const std::vector<Run> kRuns = {
    {kPageImpl, "temperature_half", "", true, "head weights at tau = 0.5"},
    {kPageImpl, "page_count_topk", "", true, "by top-k (asked: the token budget"},
    {kPageImpl, "temperature_one", "--preset released", true, "head weights at tau = 1 "},
    {kPageImpl, "tokens_walked", "--preset released", true, ""},
    {kPageImpl, "tokens_walked", "--preset entro-prefill", true, ""},
    {kPageImpl, "", "--preset released", false, ""},
    {kPageImpl, "", "--preset paper", false, ""},
    {kPageImpl, "", "--preset entro-prefill", false, ""},
    {kPageImpl, "", "--page-knob temperature=0.25 --page-knob budget_unit=pages", false, ""},
    {kReleased, "", "--preset released", false, ""},
    {kReleased, "", "", true, ""},
};

constexpr int kCasesWrong = 300, kCasesRight = 200, kSeed = 1;

std::string impl_of(const Run& r) { return std::string(r.impl) + (*r.mutant ? std::string(" --mutant ") + r.mutant : ""); }

bool python_available() { return std::system("python3 -c 'import json, fractions, math' >/dev/null 2>&1") == 0; }

std::string label(const Run& r) {
  return std::string(std::string(r.impl) == kReleased ? "released adapter" : *r.mutant ? r.mutant : "(reference)") +
         (*r.knobs ? std::string(" ") + r.knobs : std::string(" (defaults)"));
}

void expect(const Run& m, const conform_test::CliRun& r, const std::string& source, std::ostringstream& table) {
  ASSERT_TRUE(r.report.is_object()) << label(m) << ": no JSON report; stderr: " << r.err;
  const std::string verdict = r.report["verdict"];
  std::string rule = "-", shrunk = "-";
  if (r.report.contains("counterexample")) {
    const auto& c = r.report["counterexample"];
    rule = c["rule"];
    shrunk = c["heads"].dump() + " heads x T " + c["tokens"].dump() + ", G " + c["group_size"].dump() + ", P " + c["page_size"].dump();
  }
  table << std::left << std::setw(68) << label(m) << std::setw(10) << source << std::setw(11) << verdict << std::setw(7)
        << r.report["cases"]["judged"].get<int>() << std::setw(19) << rule << shrunk << "\n";
  if (m.wrong) {
    EXPECT_TRUE(r.exit_code == 1 && verdict == "violates") << label(m) << " SURVIVED " << source << ": " << r.err;
    if (r.exit_code == 1) {
      const std::string message = r.report["counterexample"]["message"];
      EXPECT_NE(rule, "tie-order") << label(m) << " " << source << ": " << message;
      EXPECT_NE(message.find(m.explains), std::string::npos) << label(m) << " " << source << ": " << message;
    }
  } else {
    EXPECT_TRUE(r.exit_code == 0 && verdict == "conforms") << label(m) << " rejected " << source << " (" << verdict << "): " << r.err
                                                           << "\n" << r.out;
  }
}

}  // namespace

TEST(ConformPageVariants, PresetsAreSentAndBothDifferencesAreNamed) {
  if (!python_available()) GTEST_SKIP() << "SKIPPED: python3 (stdlib) is needed to run the implementations";
  std::ostringstream table;
  table << std::left << std::setw(68) << "implementation, knobs sent" << std::setw(10) << "cases" << std::setw(11) << "verdict"
        << std::setw(7) << "judged" << std::setw(19) << "rule" << "shrunk\n";
  for (const auto& m : kRuns) {
    const int cases = m.wrong ? kCasesWrong : kCasesRight;
    auto r = run_cli("--method page-entrokv --seed " + std::to_string(kSeed) + " --cases " + std::to_string(cases) + " " + m.knobs +
                     " --impl " + quote(impl_of(m)));
    expect(m, r, "generated", table);
    if (!m.wrong) {
      EXPECT_EQ(r.report["cases"]["judged"].get<int>(), cases) << label(m);
    }
  }
  std::cout << table.str();
}

// Real rows (data/: attention.window_mean of every shipped prompt, every layer, rho 0.5 / 0.8 / 0.9).
TEST(ConformPageVariants, RealDumpRowsUnderThePresets) {
  if (!python_available()) GTEST_SKIP() << "SKIPPED: python3 (stdlib) is needed to run the implementations";
  if (std::system("test -f data/manifest.json") != 0) GTEST_SKIP() << "SKIPPED: no dumps in data/";
  std::ostringstream table;
  for (const auto& m : kRuns) {
    auto r = run_cli("--method page-entrokv --cases 0 --dumps data " + std::string(m.knobs) + " --impl " + quote(impl_of(m)));
    expect(m, r, "dumps", table);
  }
  std::cout << table.str();
}
