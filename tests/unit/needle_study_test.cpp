// The needle-study stage's parts: the paired statistics (audit/claims.h), the records loader's refusals
// (core/io/needle_study.h), and the stage's claim rows on a planted study whose answer is known, on a study whose
// provenance is wrong, and on the shipped records.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "audit/claims.h"
#include "audit/needle_study.h"
#include "core/error.h"
#include "core/io/needle_study.h"

using namespace kvaudit;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Reference values from an independent transcription of Newcombe (1998), method 10, in Python.
TEST(PairedStatistics, NewcombeIntervalMatchesAnIndependentTranscription) {
  struct Case {
    audit::PairedCounts c;
    double lower, upper;
  };
  for (const Case& k : {Case{{12, 9, 2, 21}, 0.018210226244, 0.289156659588}, Case{{2, 0, 5, 2}, -0.745593456330, -0.166880587997},
                        Case{{0, 0, 0, 9}, -0.299145048420, 0.299145048420}, Case{{3, 1, 6, 10}, -0.456175370850, -0.008200928395}}) {
    const audit::Interval ci = audit::paired_difference_interval(k.c);
    EXPECT_NEAR(ci.lower, k.lower, 1e-9) << k.c.both << " " << k.c.only_a << " " << k.c.only_b << " " << k.c.neither;
    EXPECT_NEAR(ci.upper, k.upper, 1e-9);
    // Swapping a and b mirrors the interval.
    const audit::Interval mirrored = audit::paired_difference_interval({k.c.both, k.c.only_b, k.c.only_a, k.c.neither});
    EXPECT_NEAR(mirrored.lower, -k.upper, 1e-12);
    EXPECT_NEAR(mirrored.upper, -k.lower, 1e-12);
  }
}

TEST(PairedStatistics, ExactMcNemar) {
  EXPECT_NEAR(audit::exact_mcnemar_p({0, 0, 5, 4}), 0.0625, 1e-12);  // 2 * 2^-5
  EXPECT_NEAR(audit::exact_mcnemar_p({0, 1, 6, 0}), 0.125, 1e-12);   // 2 * (1 + 7) / 2^7
  EXPECT_DOUBLE_EQ(audit::exact_mcnemar_p({4, 3, 3, 0}), 1.0);
  EXPECT_DOUBLE_EQ(audit::exact_mcnemar_p({9, 0, 0, 0}), 1.0);         // no discordant pair
  EXPECT_NEAR(audit::exact_mcnemar_p({0, 0, 60, 0}), 2 * std::pow(0.5, 60), 1e-30);
}

// A planted condition: its name, its study.json fields, and on which haystacks it retrieved (the same in both modes).
struct PlantedCondition {
  std::string name;
  json fields;
  std::function<bool(int)> wins;
};

// A study folder written by hand from planted conditions over `haystacks` haystacks.
fs::path write_planted(const fs::path& dir, int haystacks, const std::vector<PlantedCondition>& conditions,
                       const std::string& gguf_sha256 = "abc") {
  const fs::path folder = dir / "needle_study";
  fs::create_directories(folder);
  json fields = json::object();
  for (const PlantedCondition& c : conditions) fields[c.name] = c.fields;
  json study = {{"schema", "kvaudit-needle-study/1"}, {"status", "complete"},
                {"model", {{"id", "Org/Planted-Model"}, {"gguf_sha256", gguf_sha256}}},
                {"protocol", "planted"}, {"planned_haystacks", haystacks}, {"completed_haystacks", haystacks},
                {"modes", {"question-agnostic", "question-aware"}}, {"conditions", fields}};
  std::ofstream(folder / "study.json") << study.dump(1);
  std::ofstream records(folder / "records.jsonl");
  for (int h = 0; h < haystacks; ++h)
    for (const char* mode : {"question-agnostic", "question-aware"})
      for (const PlantedCondition& c : conditions) {
        const bool won = c.wins(h);
        records << json{{"schema", "kvaudit-needle-study/1"}, {"haystack", h}, {"mode", mode}, {"condition", c.name},
                        {"value_kind", "digits3"}, {"value_tokens", 3}, {"error", nullptr}, {"retrieved", won},
                        {"tf_mean_logprob", won ? -0.1 : -3.0}, {"value_kept_per_layer", {won ? 1.0 : 0.0, 0.5}}}
                       .dump()
                << "\n";
      }
  return folder;
}

// Two conditions (ChunkKV and EG-ChunkKV r4 at cr 0.85); `eg_wins(h)` and `chunk_wins(h)` say which retrieved.
fs::path write_study(const fs::path& dir, int haystacks, const std::function<bool(int)>& eg_wins, const std::function<bool(int)>& chunk_wins,
                     const std::string& gguf_sha256 = "abc") {
  return write_planted(dir, haystacks,
                       {{"chunkkv_c10_0.85", {{"method", "chunkkv"}, {"compression_ratio", 0.85}, {"chunk_length", 10}}, chunk_wins},
                        {"eg_chunkkv_c10_r4_0.85", {{"method", "eg-chunkkv"}, {"compression_ratio", 0.85}, {"rescue_size", 4}}, eg_wins}},
                       gguf_sha256);
}

std::string load_error(const fs::path& folder) {
  try {
    io::load_needle_study(folder.string());
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

class NeedleStudyFiles : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() / ("kvaudit_needle_" + std::to_string(::getpid()) + "_" +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  void SetUp() override { fs::remove_all(dir); }
  void TearDown() override { fs::remove_all(dir); }
};

TEST_F(NeedleStudyFiles, LoaderRefusesBadRecordsNamingFileLineAndField) {
  const fs::path folder = write_study(dir, 3, [](int) { return true; }, [](int) { return false; });
  ASSERT_EQ(load_error(folder), "");
  EXPECT_EQ(io::load_needle_study(folder.string()).runs.size(), 12u);
  std::vector<std::string> lines;
  std::ifstream in(folder / "records.jsonl");
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  in.close();
  auto rewrite = [&](const std::vector<std::string>& ls) {
    std::ofstream out(folder / "records.jsonl");
    for (const auto& l : ls) out << l << "\n";
  };
  json bad = json::parse(lines[0]);
  bad["retrieved"] = "yes";
  rewrite({bad.dump(), lines[1], lines[2]});
  EXPECT_NE(load_error(folder).find("records.jsonl:1: retrieved: must be true or false when error is null, got \"yes\""), std::string::npos)
      << load_error(folder);
  rewrite(std::vector<std::string>(lines.begin(), lines.end() - 1));
  EXPECT_NE(load_error(folder).find("(2, question-aware, eg_chunkkv_c10_r4_0.85) missing"), std::string::npos) << load_error(folder);
  std::vector<std::string> twice = lines;
  twice.push_back(lines[0]);
  rewrite(twice);
  EXPECT_NE(load_error(folder).find("records.jsonl:13: haystack/mode/condition: run (0, question-agnostic, chunkkv_c10_0.85) recorded twice"),
            std::string::npos)
      << load_error(folder);
  json late = json::parse(lines[0]);
  late["haystack"] = 3;
  rewrite({lines[0], late.dump()});
  EXPECT_NE(load_error(folder).find("records.jsonl:2: haystack: must be a completed haystack"), std::string::npos) << load_error(folder);
}

TEST_F(NeedleStudyFiles, PlantedWinnerGivesTheClaimItsSideAndNeverASettledVerdict) {
  // EG-ChunkKV retrieves on all 20 haystacks, ChunkKV on 2: the paired interval lies above 0, so the stand-in row
  // is consistent with "EG beats ChunkKV" (a stand-in never confirms).
  write_study(dir, 20, [](int) { return true; }, [](int h) { return h < 2; });
  audit::AuditContext ctx;
  ctx.data_dir = dir.string();
  const json sec = audit::needle_study_section(ctx);
  ASSERT_EQ(sec["status"], "ran");
  ASSERT_EQ(sec["claims"].size(), 2u);  // one per mode; no page conditions, so no needle-recall row
  for (const json& c : sec["claims"]) {
    EXPECT_EQ(c["protocol"], "stand-in");
    EXPECT_EQ(c["observations"], 20);
    EXPECT_GT(c["interval"]["lower"].get<double>(), 0.0);
    EXPECT_EQ(c["verdict"], "consistent") << c.dump();
  }
  // The opposite planting: the same rows say not-reproduced.
  fs::remove_all(dir);
  write_study(dir, 20, [](int h) { return h < 2; }, [](int) { return true; });
  const json opposite = audit::needle_study_section(ctx);  // named: a range-for over a temporary's member dangles
  ASSERT_EQ(opposite["claims"].size(), 2u);
  for (const json& c : opposite["claims"]) EXPECT_EQ(c["verdict"], "not-reproduced") << c.dump();
  EXPECT_TRUE(opposite["findings"].empty());
}

TEST_F(NeedleStudyFiles, PageVariantsArePairedWithinTheirPresetAndAgainstEachOther) {
  // kvaudit's default: entropy on all 20 haystacks, mean on 10; the released preset: entropy on 18, mean on none.
  auto page = [](const char* pooling, const char* preset) {
    json f = {{"method", "page-entrokv"}, {"compression_ratio", 0.8}, {"pooling", pooling}};
    if (*preset) f["preset"] = preset;
    return f;
  };
  write_planted(dir, 20, {{"page_entrokv_entropy_0.8", page("entropy", ""), [](int) { return true; }},
                          {"page_entrokv_mean_0.8", page("mean", ""), [](int h) { return h < 10; }},
                          {"page_entrokv_released_0.8", page("entropy", "released"), [](int h) { return h < 18; }},
                          {"page_entrokv_released_mean_0.8", page("mean", "released"), [](int) { return false; }}});
  audit::AuditContext ctx;
  ctx.data_dir = dir.string();
  const json sec = audit::needle_study_section(ctx);
  ASSERT_EQ(sec["status"], "ran");
  std::map<std::string, json> pairs;  // "label | mode" -> row
  for (const json& row : sec["tables"][1]["rows"]) pairs[row[1].get<std::string>() + " | " + row[2].get<std::string>()] = row;
  ASSERT_EQ(pairs.size(), 6u) << sec["tables"][1].dump();
  const json& ours = pairs.at("Page-EntroKV entropy - mean pooling, cr 0.8 | question-aware");
  EXPECT_EQ(ours[4], "1.00");
  EXPECT_EQ(ours[5], "0.50");
  const json& released = pairs.at("Page-EntroKV entropy - mean pooling, released preset, cr 0.8 | question-aware");
  EXPECT_EQ(released[4], "0.90");
  EXPECT_EQ(released[5], "0.00");
  EXPECT_EQ(released[7], "18 / 0");
  EXPECT_EQ(released[8], "7.6e-06");  // 2 * 2^-18, which four decimals would print as 0.0000
  const json& variants = pairs.at("Page-EntroKV released preset - kvaudit default, cr 0.8 | question-aware");
  EXPECT_EQ(variants[7], "0 / 2");
  EXPECT_EQ(variants[8], "0.5000");
  // One needle-recall claim row per variant and mode, each naming its variant; a paired 0.9 or 0.5 is not 1.
  ASSERT_EQ(sec["claims"].size(), 4u);
  int naming_released = 0;
  for (const json& c : sec["claims"]) {
    EXPECT_EQ(c["verdict"], "not-reproduced") << c.dump();
    naming_released += c["measured"].get<std::string>().find("the `released` preset") != std::string::npos;
  }
  EXPECT_EQ(naming_released, 2);
}

TEST_F(NeedleStudyFiles, StudyOfAnotherModelThanTheDumpsIsAFinding) {
  write_study(dir, 2, [](int) { return true; }, [](int) { return true; }, "aaaa");
  std::ofstream(dir / "manifest.json") << json{{"model", {{"gguf_sha256", "bbbb"}}}}.dump();
  audit::AuditContext ctx;
  ctx.data_dir = dir.parent_path().string();
  // The study sits in a model folder of the data tree (data/<model>/needle_study).
  const fs::path tree = dir.parent_path() / (dir.filename().string() + "_tree");
  fs::remove_all(tree);
  fs::create_directories(tree);
  fs::rename(dir, tree / "model");
  ctx.data_dir = tree.string();
  const json sec = audit::needle_study_section(ctx);
  fs::remove_all(tree);
  ASSERT_EQ(sec["findings"].size(), 1u);
  EXPECT_EQ(sec["findings"][0]["rule"], "needle-provenance");
  EXPECT_EQ(sec["findings"][0]["verdict"], "violates");
}

TEST(NeedleStudyShipped, EveryShippedStudyLoadsAndMatchesItsModelsDumps) {
  const std::vector<std::string> studies = io::find_needle_studies("data");
  if (studies.empty()) GTEST_SKIP() << "no needle study shipped under data/";
  audit::AuditContext ctx;
  ctx.data_dir = "data";
  const json sec = audit::needle_study_section(ctx);
  EXPECT_EQ(sec["status"], "ran");
  EXPECT_TRUE(sec["findings"].empty()) << sec["findings"].dump();
  for (const std::string& folder : studies) {
    const io::NeedleStudy s = io::load_needle_study(folder);
    EXPECT_EQ(s.runs.size(), static_cast<std::size_t>(s.completed_haystacks) * s.modes.size() * s.conditions.size());
  }
  // Every claim row is a stand-in row (audit_report_test validates the whole report, this section included).
  for (const json& c : sec["claims"]) EXPECT_EQ(c["protocol"], "stand-in");
}

}  // namespace
