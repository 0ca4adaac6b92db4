// `kvaudit page-select` and `kvaudit union-overhead` end to end: JSON on good input, one line and exit 2 on bad.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/io/npy.h"

namespace {

struct CliRun {
  int code = -1;
  std::string out, err;
};

CliRun run(const std::string& args) {
  const char* bin = std::getenv("KVAUDIT_BIN");
  if (bin == nullptr) throw std::runtime_error("KVAUDIT_BIN not set");
  const auto dir = std::filesystem::temp_directory_path();
  const std::string out = (dir / "paging_cli_out.txt").string(), err = (dir / "paging_cli_err.txt").string();
  const int status = std::system((std::string(bin) + " " + args + " >" + out + " 2>" + err).c_str());
  CliRun r;
  r.code = WEXITSTATUS(status);
  std::ifstream o(out), e(err);
  r.out.assign(std::istreambuf_iterator<char>(o), {});
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  return r;
}

std::string write(const std::string& name, const std::vector<kvaudit::Index>& shape, const std::vector<float>& v) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  kvaudit::io::write_npy(path, shape, v);
  return path;
}

// 4 query heads x 32 tokens: heads 0 and 2 point at different pages, heads 1 and 3 are uniform.
std::vector<float> attention() {
  std::vector<float> v(4 * 32, 1.0f / 32);
  for (int t = 0; t < 32; ++t) v[t] = (t >= 8 && t < 16) ? 0.125f : 0.0f;
  for (int t = 0; t < 32; ++t) v[2 * 32 + t] = (t >= 24) ? 0.125f : 0.0f;
  return v;
}

void expect_bad_input(const CliRun& r) {
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace

TEST(PagingCli, PageSelectPrintsKeptPagesAndTheOracleVerdict) {
  const std::string f = write("paging_cli_ok.npy", {4, 32}, attention());
  CliRun r = run("page-select --attn " + f + " --group-size 2 --page-size 8 --compression-ratio 0.75");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["budget"], 8);
  ASSERT_EQ(j["groups"].size(), 2u);
  // Budget 8: the reserved sink page 0 alone fills it.
  EXPECT_EQ(j["groups"][0]["kept_pages"], nlohmann::json::array({0}));
  EXPECT_EQ(j["oracle"]["verdict"], "conforms");
  r = run("page-select --attn " + f + " --group-size 2 --page-size 8 --compression-ratio 0.5 --sink-pages scored");
  ASSERT_EQ(r.code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  // Budget 16 = two pages. Entropy weighting gives the concentrated head 7/9 of the weight (c = 1/8 vs 1/28),
  // so its page wins; the uniform head ties the two other full pages, and the tie goes to the lower index
  // (page 0 loses: its 4 sink positions score 0 once isolated).
  EXPECT_NEAR(j["groups"][0]["weights"][0].get<double>(), 7.0 / 9.0, 1e-15);  // a few roundings of 2^-53
  EXPECT_EQ(j["groups"][0]["kept_pages"], nlohmann::json::array({1, 2}));
  EXPECT_EQ(j["groups"][1]["kept_pages"], nlohmann::json::array({1, 3}));
  EXPECT_EQ(j["total_retained_tokens"], 32);
}

TEST(PagingCli, UnionOverheadPrintsExactRatios) {
  const std::string f = write("paging_cli_union.npy", {4, 32}, attention());
  CliRun r = run("union-overhead --attn " + f + " --group-size 2 --compression-ratio 0.75 --page-size 8");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["k"], 8);
  // Head 0 keeps [8, 16); head 1 (uniform) keeps [0, 8): disjoint, ratio 2 = 2 - 0/8.
  EXPECT_EQ(j["groups"][0]["token"]["ratio"], "2");
  EXPECT_EQ(j["groups"][0]["token"]["two_head_identity"], "2");
  EXPECT_EQ(j["groups"][0]["token"]["verdict"], "conforms");
}

TEST(PagingCli, BadInputIsOneLineAndExit2) {
  const std::string ok = write("paging_cli_ok2.npy", {4, 32}, attention());
  expect_bad_input(run("page-select --attn " + ok + " --group-size 3 --compression-ratio 0.5"));
  expect_bad_input(run("page-select --attn " + ok + " --group-size 2 --page-size 0 --compression-ratio 0.5"));
  expect_bad_input(run("page-select --attn " + ok + " --group-size 2 --compression-ratio 1.5"));
  expect_bad_input(run("page-select --attn " + ok + " --group-size 2 --compression-ratio 0.5 --pooling median"));
  expect_bad_input(run("union-overhead --attn " + ok + " --group-size 3 --compression-ratio 0.5"));
  auto nan = attention();
  nan[5] = std::numeric_limits<float>::quiet_NaN();
  expect_bad_input(run("page-select --attn " + write("paging_cli_nan.npy", {4, 32}, nan) + " --group-size 2 --compression-ratio 0.5"));
  auto loose = attention();
  loose[40] = 0.5f;  // row 1 sums to 1.47
  expect_bad_input(run("union-overhead --attn " + write("paging_cli_loose.npy", {4, 32}, loose) + " --group-size 2 --compression-ratio 0.5"));
  auto neg = attention();
  neg[33] = -0.01f;
  neg[34] += 0.01f;
  expect_bad_input(run("page-select --attn " + write("paging_cli_neg.npy", {4, 32}, neg) + " --group-size 2 --compression-ratio 0.5"));
  expect_bad_input(run("page-select --attn " + write("paging_cli_1d.npy", {128}, attention()) + " --group-size 2 --compression-ratio 0.5"));
}
