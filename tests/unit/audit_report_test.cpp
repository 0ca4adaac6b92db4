// The audit report: schema-valid, offline HTML, deterministic, shards merge to the unsharded report,
// atomic output. Runs the real kvaudit binary on the shipped dumps with --quick.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/audit_runner.h"
#include "reports/render.h"
#include "reports/report_schema.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string bin() {
  const char* b = std::getenv("KVAUDIT_BIN");
  return b ? b : "build/kvaudit";
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("kvaudit-report-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

// KVAUDIT_SAMPLE_DUMPS=1 (the sanitizer stage): the audits below read a tree holding the SmolLM2 model
// alone (the files of data/ itself), as four sanitized quick audits of all three models would take most of CI.
bool sampled() {
  const char* v = std::getenv("KVAUDIT_SAMPLE_DUMPS");
  return v != nullptr && std::string(v) == "1";
}

std::string data_flag() {
  if (!sampled()) return "";
  static const fs::path tree = [] {
    const char* root = std::getenv("KVAUDIT_ROOT");
    const fs::path data = fs::absolute(fs::path(root ? root : ".") / "data");
    fs::path t = fs::temp_directory_path() / ("kvaudit-report-test-tree-" + std::to_string(::getpid()));
    fs::remove_all(t);
    fs::create_directories(t);
    std::atexit([] { fs::remove_all(fs::temp_directory_path() / ("kvaudit-report-test-tree-" + std::to_string(::getpid()))); });
    for (const auto& e : fs::directory_iterator(data))
      if (e.is_regular_file() || e.path().filename() == "licenses") fs::create_symlink(e.path(), t / e.path().filename());
    return t;
  }();
  return " --data " + tree.string();
}

int run(const std::string& args) {
  const std::string cmd = bin() + " " + args + (args.rfind("audit", 0) == 0 ? data_flag() : "") + " >/dev/null 2>&1";
  return WEXITSTATUS(std::system(cmd.c_str()));
}

json without_volatile(json r) {
  r.erase("volatile");
  return r;
}

class AuditReport : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fresh_dir("full");
    ASSERT_EQ(run("audit --quick --quiet -j 2 --out " + dir_.string()), 0);
  }
  static fs::path dir_;
};
fs::path AuditReport::dir_;

}  // namespace

TEST_F(AuditReport, WritesThreeFilesAndJsonMatchesSchema) {
  for (const char* f : {"report.json", "report.md", "report.html"}) ASSERT_TRUE(fs::exists(dir_ / f)) << f;
  json r = json::parse(slurp(dir_ / "report.json"));
  EXPECT_NO_THROW(kvaudit::reports::validate_report(r));
  ASSERT_FALSE(r["sections"].empty());
  // Every registered stage appears, even when its inputs are missing.
  EXPECT_EQ(r["sections"].size(), kvaudit::audit::audit_stages().size());
  EXPECT_FALSE(r["claims"].empty());
}

// Three models: the one-screen overview counts findings per model and stage and scores each claim per model;
// tables and claims are tagged with their model.
TEST_F(AuditReport, OverviewAndClaimsAreGroupedByModel) {
  const json r = json::parse(slurp(dir_ / "report.json"));
  std::set<std::string> models;
  for (const auto& p : r["inputs"]["prompts"]) models.insert(p["model"].get<std::string>());
  const std::set<std::string> expected =
      sampled() ? std::set<std::string>{"SmolLM2-135M-Instruct"}
                : std::set<std::string>{"SmolLM2-135M-Instruct", "Qwen2.5-Coder-0.5B-Instruct", "Qwen2.5-Coder-1.5B-Instruct"};
  EXPECT_EQ(models, expected);
  const json board = kvaudit::reports::claims_scoreboard(r);
  for (const auto& m : models) EXPECT_NE(std::find(board["columns"].begin(), board["columns"].end(), m), board["columns"].end()) << m;
  std::set<std::string> claim_models;
  for (const auto& c : r["claims"])
    if (c.contains("model")) claim_models.insert(c["model"].get<std::string>());
  EXPECT_EQ(claim_models, models) << "every model carries claims of its own";
  // The scoreboard's rows come in groups, each group once, in its order; the claims are typed (validate_report
  // re-judges each row) and no stand-in row settles its claim.
  ASSERT_EQ(board["columns"][0], "group");
  std::vector<std::string> groups;
  for (const auto& row : board["rows"])
    if (groups.empty() || groups.back() != row[0]) groups.push_back(row[0].get<std::string>());
  EXPECT_EQ(std::set<std::string>(groups.begin(), groups.end()).size(), groups.size()) << board["rows"].dump();
  EXPECT_EQ(groups.front(), "refuted on anyone's data");
  for (const auto& c : r["claims"]) {
    if (c["protocol"] == "stand-in") {
      EXPECT_TRUE(c["verdict"] != "confirmed" && c["verdict"] != "refuted") << c.dump();
    }
    if (c["claim"].get<std::string>().find("exactly 1.000") != std::string::npos) {
      EXPECT_EQ(c["verdict"], "by-construction") << c.dump();
      EXPECT_EQ(c["proof"], "proofs/05_page_accounting.md");
    }
  }
  const json counts = kvaudit::reports::verdict_counts_table(r);
  EXPECT_EQ(counts["columns"].size(), r["sections"].size() + 1);
  const std::string html = slurp(dir_ / "report.html");
  EXPECT_LT(html.find("Claims scoreboard"), html.find("<section")) << "the overview comes before the sections";
  EXPECT_NE(html.find("<details><summary>"), std::string::npos) << "long tables are collapsed";
}

// Where the audit samples, the report says how much it verified, per stage and model: --quick samples, so some
// fraction is below 1, and none is above it. (The -j 2 report above also ran the pooling stage's rows in parallel,
// and the shard test below compares it with -j 1 runs.)
TEST_F(AuditReport, SamplingIsReportedPerStageAndModel) {
  const json r = json::parse(slurp(dir_ / "report.json"));
  EXPECT_EQ(r["inputs"]["exhaustive"], false);
  for (const char* id : {"pooling", "paging"}) {
    const json* section = nullptr;
    for (const auto& s : r["sections"])
      if (s["section"] == id) section = &s;
    ASSERT_NE(section, nullptr) << id;
    const json* table = nullptr;
    for (const auto& t : (*section)["tables"])
      if (t["title"].get<std::string>().rfind("Sampling:", 0) == 0) table = &t;
    ASSERT_NE(table, nullptr) << id << " has no sampling table";
    ASSERT_EQ((*table)["columns"][0], "model") << id;
    ASSERT_FALSE((*table)["rows"].empty()) << id;
    std::set<std::string> models;
    bool sampled_somewhere = false;
    for (const auto& row : (*table)["rows"]) {
      const std::size_t n = row.size();
      const long verified = row[n - 3], total = row[n - 2];
      EXPECT_LE(verified, total) << row.dump();
      EXPECT_GT(total, 0) << row.dump();
      sampled_somewhere |= verified < total;
      models.insert(row[0].get<std::string>());
    }
    EXPECT_TRUE(sampled_somewhere) << id << ": --quick samples, and its table must say so";
    EXPECT_EQ(models.size(), sampled() ? 1u : 3u) << id;
  }
}

TEST(ReportTables, CounterexamplesBecomeFieldValueRows) {
  const json ce = {{"layer", 3}, {"kept", json::array({1, 2, 3})}, {"scores", {{"tensor", "scores.snapkv"}}},
                   {"row", std::vector<int>(40, 7)}};
  const json t = kvaudit::reports::counterexample_table(ce);
  ASSERT_EQ(t["rows"].size(), 4u);
  EXPECT_EQ(t["rows"][0], json::array({"kept", "[1,2,3]"}));
  EXPECT_EQ(t["rows"][1], json::array({"layer", "3"}));
  EXPECT_EQ(t["rows"][2][0], "row");
  EXPECT_NE(t["rows"][2][1].get<std::string>().find("(40 entries)"), std::string::npos);
  EXPECT_EQ(t["rows"][3], json::array({"scores.tensor", "scores.snapkv"}));
}

TEST_F(AuditReport, HtmlHasNoExternalReferences) {
  std::string html = slurp(dir_ / "report.html");
  ASSERT_GT(html.size(), 1000u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  // The only "http" allowed is the SVG namespace identifier, which is never fetched.
  std::string stripped = std::regex_replace(html, std::regex("xmlns=\"http://www.w3.org/2000/svg\""), "");
  EXPECT_EQ(stripped.find("http"), std::string::npos);
  EXPECT_NE(html.find("<svg"), std::string::npos) << "charts are inline SVG";
}

TEST_F(AuditReport, ShardsMergeToTheUnshardedReportAndReportsAreDeterministic) {
  fs::path s0 = fresh_dir("s0"), s1 = fresh_dir("s1"), s2 = fresh_dir("s2"), merged = fresh_dir("merged");
  // The shards run their units one at a time, the unsharded report two at a time: equal reports also show the
  // thread count changes nothing but the volatile field.
  ASSERT_EQ(run("audit --quick --quiet -j 1 --shard 0/3 --out " + s0.string()), 0);
  ASSERT_EQ(run("audit --quick --quiet -j 1 --shard 1/3 --out " + s1.string()), 0);
  ASSERT_EQ(run("audit --quick --quiet -j 1 --shard 2/3 --out " + s2.string()), 0);
  ASSERT_EQ(run("merge --out " + merged.string() + " " + (s2 / "report.json").string() + " " + (s0 / "report.json").string() + " " +
                (s1 / "report.json").string()),
            0);
  // Every unit was computed twice, in different processes (a shard and the unsharded run): equal reports apart
  // from the volatile field are also the determinism check.
  EXPECT_EQ(without_volatile(json::parse(slurp(merged / "report.json"))), without_volatile(json::parse(slurp(dir_ / "report.json"))));
  const std::string md = slurp(dir_ / "report.md"), merged_md = slurp(merged / "report.md");
  ASSERT_NE(md.find("Inputs:"), std::string::npos);
  EXPECT_EQ(md.substr(md.find("Inputs:")), merged_md.substr(merged_md.find("Inputs:")));
  // A missing shard is an error, not a smaller report.
  fs::path partial = fresh_dir("partial");
  EXPECT_EQ(run("merge --out " + partial.string() + " " + (s0 / "report.json").string()), 2);
  EXPECT_FALSE(fs::exists(partial / "report.json"));
  for (const auto& d : {s0, s1, s2, merged, partial}) fs::remove_all(d);
}

TEST(AuditReportRejects, BadShardAndUnwritableOutputLeaveNoReport) {
  fs::path d = fresh_dir("bad");
  EXPECT_EQ(run("audit --quick --quiet --shard 3/2 --out " + d.string()), 2);
  EXPECT_EQ(run("audit --quick --quiet --shard x --out " + d.string()), 2);
  EXPECT_FALSE(fs::exists(d / "report.json"));
  EXPECT_EQ(run("audit --quick --quiet --out /proc/kvaudit-cannot-write"), 2);
}

TEST(ReportSchema, RejectsMalformedDocuments) {
  json good = {{"schema", kvaudit::reports::kReportSchema}, {"volatile", json::object()}, {"inputs", json::object()},
               {"verdict", "conforms"}, {"sections", json::array()}, {"claims", json::array()}};
  EXPECT_NO_THROW(kvaudit::reports::validate_report(good));
  json bad = good;
  bad["schema"] = "other/1";
  EXPECT_THROW(kvaudit::reports::validate_report(bad), std::invalid_argument);
  bad = good;
  bad["sections"] = json::array({{{"section", "x"}, {"title", "X"}, {"status", "missing-inputs"}}});
  EXPECT_THROW(kvaudit::reports::validate_report(bad), std::invalid_argument) << "a section that did not run must say why";
  bad = good;
  bad["sections"] = json::array({{{"section", "x"}, {"title", "X"}, {"status", "ran"},
                                  {"findings", json::array({{{"id", "f"}, {"verdict", "violates"}, {"message", "m"}}})}}});
  EXPECT_THROW(kvaudit::reports::validate_report(bad), std::invalid_argument) << "a violation needs a reproduce command";
}

TEST(SvgChart, ScalesPointsIntoTheViewBoxAndEscapesText) {
  json chart = {{"title", "a<b"}, {"kind", "line"}, {"x_label", "x"}, {"y_label", "y"},
                {"series", json::array({{{"name", "s&t"}, {"points", json::array({json::array({0, 0}), json::array({10, 5})})}}})}};
  std::string svg = kvaudit::reports::render_svg_chart(chart);
  EXPECT_NE(svg.find("a&lt;b"), std::string::npos);
  EXPECT_NE(svg.find("s&amp;t"), std::string::npos);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
}
