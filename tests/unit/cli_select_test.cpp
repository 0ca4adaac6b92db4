// `kvaudit select` / `kvaudit check` run as the real binary ($KVAUDIT_BIN): happy paths, verdict exits and
// one test per class of bad input (one line on stderr naming the file or flag and the field, exit 2, empty
// stdout).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/io/npy.h"

namespace fs = std::filesystem;

namespace {

struct Outcome {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CliSelect : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("KVAUDIT_BIN");
    ASSERT_NE(bin, nullptr) << "KVAUDIT_BIN must name the kvaudit executable (set by CTest)";
    bin_ = bin;
    ASSERT_TRUE(fs::exists(bin_)) << bin_;
    dir_ = fs::temp_directory_path() /
           ("kvaudit_cli_select_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    // Four chunks of 4 (see core_select_test.cpp): EG-ChunkKV, C = 4, r = 2, rho 0.5 keeps
    // {0, 1, 4, 5, 8, 9, 10, 11}.
    kvaudit::io::write_npy(path("four.npy"), {16}, {8, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 3, 1});
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  Outcome run(const std::string& args) const {
    const std::string out = path("stdout.txt"), err = path("stderr.txt");
    const std::string cmd = "'" + bin_ + "' " + args + " >'" + out + "' 2>'" + err + "'";
    const int status = std::system(cmd.c_str());
    Outcome r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  // Bad input: exit 2, nothing on stdout, exactly one stderr line containing every `needle`.
  void expect_bad_input(const std::string& args, const std::vector<std::string>& needles) const {
    const Outcome r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\nstderr: " << r.err;
    EXPECT_EQ(r.out, "") << args;
    ASSERT_FALSE(r.err.empty()) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    for (const auto& n : needles) EXPECT_NE(r.err.find(n), std::string::npos) << "missing '" << n << "' in: " << r.err;
  }

  std::string eg_args(const std::string& scores) const {
    return "--method eg-chunkkv --scores '" + scores + "' --compression-ratio 0.5 --chunk-length 4 --rescue-size 2";
  }

  std::string bin_;
  fs::path dir_;
};

TEST_F(CliSelect, SelectPrintsKeptPositionsAndBudget) {
  const Outcome r = run("select " + eg_args(path("four.npy")));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kept"], nlohmann::json({0, 1, 4, 5, 8, 9, 10, 11}));
  EXPECT_EQ(j["budget"], 8);
  EXPECT_EQ(j["tokens"], 16);
  EXPECT_EQ(j["method"], "eg-chunkkv");
  EXPECT_EQ(j["flavour"], "kvpress");
  EXPECT_EQ(j["per_head"], false);
  EXPECT_NE(j["budget_rule"].get<std::string>().find("int(T * (1 - rho))"), std::string::npos);
}

TEST_F(CliSelect, SelectDefaultsFollowKvpress) {
  // chunkkv defaults to C = 20: with T = 16 there is no complete chunk, so kvpress's per-head fallback
  // keeps each head's own top max(1, int(16 * 0.5)) = 8.
  std::vector<float> two_heads;
  for (int h = 0; h < 2; ++h)
    for (int t = 0; t < 16; ++t) two_heads.push_back(static_cast<float>(h == 0 ? t : 15 - t));
  kvaudit::io::write_npy(path("two.npy"), {2, 16}, two_heads);
  const Outcome r = run("select --method chunkkv --scores '" + path("two.npy") + "' --compression-ratio 0.5");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["chunk_length"], 20);
  EXPECT_EQ(j["per_head"], true);
  EXPECT_EQ(j["kept_per_head"][0], nlohmann::json({8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(j["kept_per_head"][1], nlohmann::json({0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(j["kept"].size(), 16u);  // the union over heads
  EXPECT_EQ(j["budget"], 8);
}

TEST_F(CliSelect, ExactFlavourUsesTheExactBudget) {
  // 20 one-token chunks, rho 0.9: kvpress keeps int(20 * 0.09999999999999998) = 1 chunk, exact 2.
  std::vector<float> rising;
  for (int t = 0; t < 20; ++t) rising.push_back(static_cast<float>(t));
  kvaudit::io::write_npy(path("rising.npy"), {20}, rising);
  const std::string base = "select --method chunkkv --scores '" + path("rising.npy") + "' --compression-ratio 0.9 --chunk-length 1";
  const Outcome k = run(base), e = run(base + " --flavour exact");
  ASSERT_EQ(k.code, 0) << k.err;
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(nlohmann::json::parse(k.out)["kept"], nlohmann::json({19}));
  EXPECT_EQ(nlohmann::json::parse(e.out)["kept"], nlohmann::json({18, 19}));
}

TEST_F(CliSelect, CheckAcceptsTheSelectorsOwnOutputAndRejectsAnother) {
  const Outcome s = run("select " + eg_args(path("four.npy")));
  ASSERT_EQ(s.code, 0) << s.err;
  std::ofstream(path("sel.json")) << s.out;
  const Outcome ok = run("check " + eg_args(path("four.npy")) + " --selection '" + path("sel.json") + "'");
  EXPECT_EQ(ok.code, 0) << ok.out << ok.err;
  const auto jo = nlohmann::json::parse(ok.out);
  EXPECT_EQ(jo["admissible"], true);
  EXPECT_EQ(jo["verdict"], "conforms");

  // The first 8 positions: right size, wrong choice (chunk 0 is spiky and may keep only 2).
  std::ofstream(path("bad.json")) << R"({"kept": [0, 1, 2, 3, 4, 5, 6, 7]})";
  const Outcome bad = run("check " + eg_args(path("four.npy")) + " --selection '" + path("bad.json") + "'");
  EXPECT_EQ(bad.code, 1) << bad.out << bad.err;
  const auto jb = nlohmann::json::parse(bad.out);
  EXPECT_EQ(jb["admissible"], false);
  EXPECT_EQ(jb["verdict"], "violates");
  EXPECT_FALSE(jb["rule"].get<std::string>().empty());
  // The rule stage ran once, decided in double or in 50 digits (proofs/15_filtered_admissibility.md).
  EXPECT_EQ(jb["arithmetic"]["decided_in_double"].get<int>() + jb["arithmetic"]["fell_back_to_50_digits"].get<int>(), 1) << bad.out;

  // Wrong budget and unsorted input are verdicts too, not input errors.
  std::ofstream(path("short.json")) << R"({"kept": [11, 0]})";
  const Outcome sh = run("check " + eg_args(path("four.npy")) + " --selection '" + path("short.json") + "'");
  EXPECT_EQ(sh.code, 1) << sh.out << sh.err;
  // Stopped at the budget rule: no arithmetic ran.
  const auto js = nlohmann::json::parse(sh.out);
  EXPECT_EQ(js["arithmetic"]["decided_in_double"], 0);
  EXPECT_EQ(js["arithmetic"]["fell_back_to_50_digits"], 0);
}

TEST_F(CliSelect, BadScoreFiles) {
  expect_bad_input("select " + eg_args(path("missing.npy")), {path("missing.npy"), "file"});

  std::ofstream(path("garbage.npy")) << "this is not an npy file at all";
  expect_bad_input("select " + eg_args(path("garbage.npy")), {path("garbage.npy"), "magic"});

  {  // a valid int64 NPY: the wrong dtype for scores
    std::string header = "{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }";
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::ofstream f(path("ints.npy"), std::ios::binary);
    f.write("\x93NUMPY\x01\x00", 8);
    const char len[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
    f.write(len, 2);
    f << header;
    const std::int64_t data[4] = {1, 2, 3, 4};
    f.write(reinterpret_cast<const char*>(data), sizeof data);
  }
  expect_bad_input("select " + eg_args(path("ints.npy")), {path("ints.npy"), "dtype"});

  kvaudit::io::write_npy(path("cube.npy"), {2, 2, 4}, std::vector<float>(16, 1.0f));
  expect_bad_input("select " + eg_args(path("cube.npy")), {path("cube.npy"), "shape"});

  kvaudit::io::write_npy(path("empty.npy"), {0}, {});
  expect_bad_input("select " + eg_args(path("empty.npy")), {path("empty.npy"), "shape"});

  kvaudit::io::write_npy(path("nan.npy"), {4}, {1, std::nanf(""), 1, 1});
  expect_bad_input("select " + eg_args(path("nan.npy")), {path("nan.npy"), "values", "NaN"});

  kvaudit::io::write_npy(path("inf.npy"), {2, 2}, {1, 1, INFINITY, 1});
  expect_bad_input("check " + eg_args(path("inf.npy")) + " --selection '" + path("x.json") + "'",
                   {path("inf.npy"), "values", "infinity"});
}

TEST_F(CliSelect, BadFlags) {
  const std::string scores = "--scores '" + path("four.npy") + "'";
  expect_bad_input("select --method eg-chunkkv " + scores + " --compression-ratio 1.0", {"--compression-ratio", "compression_ratio"});
  expect_bad_input("select --method eg-chunkkv " + scores + " --compression-ratio 1e-1", {"--compression-ratio", "compression_ratio"});
  expect_bad_input("select --method eg-chunkkv " + scores + " --compression-ratio -0.5", {"--compression-ratio"});
  expect_bad_input("select --method chunkkv " + scores + " --compression-ratio 0.5 --chunk-length 0", {"--chunk-length", "chunk_length"});
  expect_bad_input("select --method eg-chunkkv " + scores + " --compression-ratio 0.5 --flavour exact --rescue-size 0",
                   {"--rescue-size", "rescue_size"});
  // kvpress asserts chunk_length > low_entropy_chunk_length.
  expect_bad_input("select --method eg-chunkkv " + scores + " --compression-ratio 0.5 --chunk-length 4 --rescue-size 4",
                   {"--chunk-length", "kvpress asserts"});
  expect_bad_input("select --method eg-chunkkv " + scores + " --compression-ratio 0.5 --entropy-threshold 0.5",
                   {"--entropy-threshold"});
  expect_bad_input("select --method eg-chunkkv " + scores + " --compression-ratio 0.5 --median mean", {"--median"});
  expect_bad_input("select " + scores + " --compression-ratio 0.5", {"usage", "--method"});
  expect_bad_input("select --method h2o " + scores + " --compression-ratio 0.5", {"usage", "--method"});
}

TEST_F(CliSelect, BadSelectionFiles) {
  const std::string base = "check " + eg_args(path("four.npy")) + " --selection ";
  expect_bad_input(base + "'" + path("nope.json") + "'", {path("nope.json"), "file"});
  std::ofstream(path("broken.json")) << "{\"kept\": [1, 2";
  expect_bad_input(base + "'" + path("broken.json") + "'", {path("broken.json"), "json"});
  std::ofstream(path("nokept.json")) << R"({"positions": [1, 2]})";
  expect_bad_input(base + "'" + path("nokept.json") + "'", {path("nokept.json"), "kept", "missing"});
  std::ofstream(path("floats.json")) << R"({"kept": [1.5, 2]})";
  expect_bad_input(base + "'" + path("floats.json") + "'", {path("floats.json"), "kept", "integer"});
}

}  // namespace
