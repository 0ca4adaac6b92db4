// Every selection the released kvpress presses made on the shipped dumps (every prompt, layer, press and
// ratio) must be admissible for the oracle, except the cases in the ledger below, each with its reason.
// KVAUDIT_DUMP_CASE=<prompt>:<press>:<ratio>:<layer> re-runs one case and prints its verdict (the
// reproduce command the dump-conformance audit stage prints).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "audit/dump_conformance.h"
#include "core/io/dump.h"

namespace {

using kvaudit::Index;
using kvaudit::VerdictKind;
using kvaudit::audit::DumpConformanceCase;

const std::vector<kvaudit::io::PromptDump>& dumps() {
  static const std::vector<kvaudit::io::PromptDump> d = [] {
    const char* root = std::getenv("KVAUDIT_ROOT");
    return kvaudit::io::load_dumps((std::filesystem::path(root ? root : ".") / "data").string());
  }();
  return d;
}

std::string key(const DumpConformanceCase& c) {
  return c.prompt + ":" + c.press + ":" + c.ratio + ":" + std::to_string(c.layer);
}

// Known disagreements, FlashInfer-style: key -> why it is expected. An expected violation that now
// conforms fails the test too, so the ledger cannot go stale silently.
const std::map<std::string, std::string>& ledger() {
  static const std::map<std::string, std::string> known = {};
  return known;
}

TEST(RealDumpConformance, EveryRecordedSelectionIsAdmissible) {
  const auto cases = kvaudit::audit::check_dump_conformance(dumps());
  ASSERT_EQ(cases.size(), dumps().size() * 3 * 6 * 30) << "3 presses x 6 ratios x 30 layers per prompt";
  std::map<std::string, std::map<VerdictKind, Index>> counts;  // press.cr<ratio> -> verdict -> n
  std::set<std::string> seen_known;
  for (const auto& c : cases) {
    ++counts[c.press + ".cr" + c.ratio][c.verdict.kind];
    auto known = ledger().find(key(c));
    if (known != ledger().end()) {
      seen_known.insert(known->first);
      EXPECT_EQ(c.verdict.kind, VerdictKind::Violates) << key(c) << " is in the ledger (" << known->second
                                                       << ") but the oracle now says " << to_string(c.verdict.kind);
      continue;
    }
    EXPECT_EQ(c.verdict.kind, VerdictKind::Conforms)
        << key(c) << ": " << to_string(c.verdict.kind) << " [" << c.verdict.rule << "] " << c.verdict.message
        << "\n  reproduce: " << kvaudit::audit::dump_case_reproduce_command(c);
  }
  EXPECT_EQ(seen_known.size(), ledger().size()) << "a ledger entry names a case that no longer exists";
  for (const auto& [config, by_kind] : counts) {
    std::ostringstream line;
    line << config << ":";
    for (const auto& [kind, n] : by_kind) line << " " << to_string(kind) << "=" << n;
    std::cout << line.str() << "\n";
  }
}

TEST(RealDumpConformance, AuditSectionCountsEveryCase) {
  kvaudit::audit::AuditContext ctx;
  ctx.dumps = &dumps();
  ctx.quick = true;
  const auto sec = kvaudit::audit::dump_conformance_section(ctx);
  ASSERT_EQ(sec["status"], "ran");
  const Index cases = sec["summary"]["cases"];
  EXPECT_EQ(cases, static_cast<Index>(dumps().size()) * 3 * 6 * 3) << "quick: layers 0, 15, 29";
  const Index sum = sec["summary"]["conforming"].get<Index>() + sec["summary"]["violating"].get<Index>() +
                    sec["summary"]["inconclusive"].get<Index>() + sec["summary"]["not_run"].get<Index>();
  EXPECT_EQ(sum, cases);
  EXPECT_EQ(sec["tables"][0]["rows"].size(), 18u) << "one row per press and ratio";
  // Every non-conforming case is a finding carrying its exact inputs and a reproduce command.
  Index non_conforming_findings = 0;
  for (const auto& f : sec["findings"]) {
    if (f["verdict"] == "conforms") continue;
    ++non_conforming_findings;
    EXPECT_TRUE(f["reproduce"].get<std::string>().find("KVAUDIT_DUMP_CASE=") != std::string::npos);
    EXPECT_TRUE(f["counterexample"].contains("layer"));
  }
  EXPECT_EQ(non_conforming_findings, cases - sec["summary"]["conforming"].get<Index>());
  std::cout << "summary: " << sec["summary"].dump() << "\nclaims: " << sec["claims"].dump() << "\n";
}

TEST(RealDumpConformance, MissingDumpsAreReportedNotPassed) {
  kvaudit::audit::AuditContext ctx;
  const std::vector<kvaudit::io::PromptDump> none;
  ctx.dumps = &none;
  EXPECT_EQ(kvaudit::audit::dump_conformance_section(ctx)["status"], "missing-inputs");
}

// Mutants: a recorded selection with one kept position swapped for a dropped one, or shifted by one chunk
// boundary, must be rejected — the conforming verdicts above are not vacuous.
TEST(RealDumpConformance, MutatedSelectionsAreRejected) {
  kvaudit::io::PromptDump p = dumps().front();
  Index rejected = 0, tried = 0;
  for (const char* name : {"kept.chunkkv_c10.cr0.9", "kept.eg_chunkkv_c10_r4.cr0.9"}) {
    auto& t = p.tensors.at(name);
    const Index n = t.shape[1];
    for (Index layer : {Index{0}, Index{15}, Index{29}}) {
      kvaudit::Positions kept = kvaudit::io::kept_positions(t, layer);
      // Replace the first kept position by the first dropped one (keeps the size; breaks a rule).
      std::set<Index> in(kept.begin(), kept.end());
      Index dropped = 0;
      while (in.count(dropped)) ++dropped;
      kept.front() = dropped;
      std::sort(kept.begin(), kept.end());
      auto saved = t.integers;
      for (std::size_t i = 0; i < kept.size(); ++i) t.integers[static_cast<std::size_t>(layer * n) + i] = kept[i];
      auto k = kvaudit::io::parse_kept_name(name);
      const auto c = kvaudit::audit::check_dump_case(p, k->press, k->ratio, layer);
      ++tried;
      rejected += c.verdict.kind == VerdictKind::Violates;
      EXPECT_EQ(c.verdict.kind, VerdictKind::Violates) << name << " layer " << layer << ": " << c.verdict.message;
      t.integers = saved;
    }
  }
  EXPECT_EQ(rejected, tried);
}

// Reproduction harness for one case named by KVAUDIT_DUMP_CASE: disabled, so a normal run neither passes nor skips it;
// run it with --gtest_also_run_disabled_tests (the audit's reproduce commands do).
TEST(RealDumpConformance, DISABLED_SingleCase) {
  const char* spec = std::getenv("KVAUDIT_DUMP_CASE");
  if (spec == nullptr) GTEST_SKIP() << "set KVAUDIT_DUMP_CASE=<prompt>:<press>:<ratio>:<layer>";
  std::vector<std::string> parts;
  std::stringstream in(spec);
  for (std::string part; std::getline(in, part, ':');) parts.push_back(part);
  ASSERT_EQ(parts.size(), 4u) << "KVAUDIT_DUMP_CASE=" << spec;
  const kvaudit::io::PromptDump* dump = nullptr;
  for (const auto& d : dumps()) {
    if (d.name == parts[0]) dump = &d;
  }
  ASSERT_NE(dump, nullptr) << "no prompt " << parts[0];
  const auto c = kvaudit::audit::check_dump_case(*dump, parts[1], parts[2], std::stoll(parts[3]));
  std::cout << key(c) << ": T=" << c.tokens << " kept=" << c.kept << " verdict=" << to_string(c.verdict.kind) << " ["
            << c.verdict.rule << "] " << c.verdict.message << "\n";
  EXPECT_EQ(c.verdict.kind, VerdictKind::Conforms);
}

}  // namespace
