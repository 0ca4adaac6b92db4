// Suites are the tests CTest lists with label property or proof, run as CTest runs them with
// --gtest_output=json; counts come from that file, RapidCheck case counts and
// proof coverage lines from its stdout ("OK, passed N tests", "proof: <id>: <verdict>: <coverage>").
#include "audit/suite_summary.h"
#include "audit/parallel_rows.h"
#include "audit/verdict_text.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <regex>

namespace kvaudit::audit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path executable_dir() {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : self.parent_path();
}

std::string run_capture(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return out;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  ::pclose(pipe);
  return out;
}

struct Suite {
  std::string label;
  std::string name;
  std::string command;  // shell-quoted, with working directory and environment as CTest runs it
};

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The property and proof tests CTest knows in the build tree holding this binary, as CTest would run them, with
// RapidCheck seeded from the audit's seed: the same audit gives the same report (ctest itself draws fresh seeds).
std::vector<Suite> discover_suites(const fs::path& build_dir, std::uint64_t seed) {
  std::vector<Suite> suites;
  json listing = json::parse(run_capture("ctest --test-dir " + quote(build_dir.string()) + " --show-only=json-v1 2>/dev/null"), nullptr, false);
  if (listing.is_discarded()) return suites;
  for (const auto& t : listing.value("tests", json::array())) {
    std::string label, dir = ".", env;
    for (const auto& p : t.value("properties", json::array())) {
      if (p["name"] == "LABELS" && !p["value"].empty()) label = p["value"][0];
      if (p["name"] == "WORKING_DIRECTORY") dir = p["value"];
      if (p["name"] == "ENVIRONMENT")
        for (const auto& e : p["value"]) env += quote(e.get<std::string>()) + " ";
    }
    if ((label != "property" && label != "proof") || !t.contains("command")) continue;
    std::string command = "cd " + quote(dir) + " && env " + quote("RC_PARAMS=seed=" + std::to_string(seed)) + " " + env;
    for (const auto& arg : t["command"]) command += quote(arg.get<std::string>()) + " ";
    suites.push_back({label, t.value("name", ""), command});
  }
  return suites;
}

}  // namespace

Section suite_summary_section(const AuditContext& ctx) {
  json section = {{"section", "suites"}, {"title", "Property suites and proof checks"}};
  if (ctx.quick) {
    section["status"] = "not-run";
    section["status_reason"] = "--quick: suites are run by ctest, not by a quick audit";
    return section;
  }
  const fs::path bin = executable_dir();
  const std::vector<Suite> suites = discover_suites(bin, ctx.seed);
  if (suites.empty()) {
    section["status"] = "missing-inputs";
    section["status_reason"] = "no property or proof tests registered with CTest in " + bin.string() + " (run scripts/setup.sh)";
    return section;
  }
  // Each suite is a child process: they run as parallel rows (the longest, proof 15, is a third of the stage), each
  // into its own slot, and are summarized in CTest's order.
  struct Outcome {
    std::string output;
    json result;
  };
  std::vector<Outcome> outcomes(suites.size());
  // Proofs first: they are the longest suites, and a long one started last would leave the other cores idle.
  std::vector<std::size_t> launch(suites.size());
  std::iota(launch.begin(), launch.end(), std::size_t{0});
  std::stable_partition(launch.begin(), launch.end(), [&](std::size_t i) { return suites[i].label == "proof"; });
  for_each_row(suites.size(), [&](std::size_t i) {
    const Suite& suite = suites[launch[i]];
    ctx.progress("audit: suites: " + suite.name);
    const fs::path json_out = fs::temp_directory_path() / ("kvaudit-suite-" + std::to_string(::getpid()) + "-" + suite.name + ".json");
    Outcome& o = outcomes[launch[i]];
    o.output = run_capture(suite.command + "--gtest_output=json:" + quote(json_out.string()) + " 2>&1");
    std::ifstream in(json_out);
    o.result = json::parse(in, nullptr, false);
    fs::remove(json_out);
  });
  // The same seed as the audit's run: the reproduce command meets the same cases.
  const auto reproduce = [&](const std::string& name) {
    return "RC_PARAMS=seed=" + std::to_string(ctx.seed) + " ctest --test-dir " + bin.string() + " -R '^" + name + "$' --output-on-failure";
  };
  json rows = json::array(), proof_rows = json::array(), findings = json::array();
  long passed_total = 0, failed_total = 0, skipped_total = 0, cases_total = 0;
  const std::regex cases_re("OK, passed ([0-9]+) tests");
  const std::regex proof_re("proof: ([^:]+): ([^:]+): (.*)");
  for (std::size_t i = 0; i < suites.size(); ++i) {
    const auto& [label, name, command] = suites[i];
    const auto& [out, result] = outcomes[i];
    long tests = 0, failures = 0, skipped = 0, cases = 0;
    if (result.is_discarded() || !result.contains("tests")) {
      findings.push_back({{"id", "suite-crashed-" + name}, {"rule", "suite"}, {"verdict", to_string(VerdictKind::Violates)},
                          {"message", "the suite produced no result file (crashed or did not run)"}, {"reproduce", reproduce(name)}});
      ++failed_total;
      continue;
    }
    tests = result.value("tests", 0);
    failures = result.value("failures", 0) + result.value("errors", 0);
    for (const auto& suite : result.value("testsuites", json::array()))
      for (const auto& t : suite.value("testsuite", json::array()))
        if (t.value("result", "") == "SKIPPED") ++skipped;
    for (std::sregex_iterator it(out.begin(), out.end(), cases_re), end; it != end; ++it) cases += std::stol((*it)[1]);
    for (std::sregex_iterator it(out.begin(), out.end(), proof_re), end; it != end; ++it)
      proof_rows.push_back({name, (*it)[1].str(), (*it)[2].str(), (*it)[3].str()});
    rows.push_back({label, name, tests, tests - failures - skipped, failures, skipped, cases});
    passed_total += tests - failures - skipped;
    failed_total += failures;
    skipped_total += skipped;
    cases_total += cases;
    if (failures)
      findings.push_back({{"id", "suite-failed-" + name}, {"rule", "suite"}, {"verdict", to_string(VerdictKind::Violates)},
                          {"message", std::to_string(failures) + " test(s) failed"}, {"reproduce", reproduce(name)}});
  }
  section["status"] = "ran";
  section["summary"] = {{"tests_passed", passed_total}, {"tests_failed", failed_total}, {"tests_skipped", skipped_total},
                        {"property_cases", cases_total}};
  section["tables"] = json::array({{{"title", "Suites"},
                                    {"columns", {"label", "executable", "tests", "passed", "failed", "skipped", "property cases"}},
                                    {"rows", rows}}});
  if (!proof_rows.empty())
    section["tables"].push_back({{"title", "Proof checks"}, {"columns", {"executable", "statement", "verdict", "coverage"}}, {"rows", proof_rows}});
  section["findings"] = findings;
  return section;
}

}  // namespace kvaudit::audit
