// `kvaudit partition` end to end: JSON fields, each solver, and one-line exit-2 rejections naming the field.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "core/io/npy.h"

namespace {
struct CliRun {
  int code;
  std::string out;
};
CliRun run(const std::string& args) {
  const char* bin = std::getenv("KVAUDIT_BIN");
  const std::string cmd = std::string(bin ? bin : "kvaudit") + " partition " + args + " 2>/dev/null";
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), f)) out += buf.data();
  const int status = pclose(f);
  return {WEXITSTATUS(status), out};
}
std::string npy(const std::string& name, const std::vector<float>& v) {
  const auto path = (std::filesystem::temp_directory_path() / ("pooling_cli_" + name + ".npy")).string();
  kvaudit::io::write_npy(path, {static_cast<kvaudit::Index>(v.size())}, v);
  return path;
}
}  // namespace

TEST(PoolingCli, SolversAgreeOnADyadicCase) {
  const std::string p = npy("quarters", {0.25f, 0.25f, 0.25f, 0.25f});
  for (const char* solver : {"exact", "enumerate"}) {
    const CliRun r = run("--probs " + p + " --entropy-budget 1 --groups 2 --solver " + solver);
    ASSERT_EQ(r.code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["boundaries"], nlohmann::json({2}));
    EXPECT_EQ(j["groups"], 2);
    EXPECT_EQ(j["entropy_bits"], 1.0);
    EXPECT_TRUE(j["feasible"].get<bool>() && j["certified"].get<bool>());
  }
  const auto g = nlohmann::json::parse(run("--probs " + p + " --entropy-budget 1.5 --solver greedy").out);
  EXPECT_EQ(g["solver"], "greedy");
  EXPECT_LE(g["entropy_bits"].get<double>(), 1.5);
}

TEST(PoolingCli, BadInputExitsTwoWithNothingOnStdout) {
  const std::string bad_sum = npy("badsum", {0.5f, 0.6f});
  const std::string neg = npy("neg", {1.5f, -0.5f});
  const std::string ok = npy("ok", {0.5f, 0.5f});
  const std::vector<std::string> cases{"--probs " + bad_sum + " --entropy-budget 1", "--probs " + neg + " --entropy-budget 1",
                                  "--probs " + ok + " --entropy-budget -1", "--probs " + ok + " --entropy-budget 1 --groups 3",
                                  "--probs /nonexistent.npy --entropy-budget 1"};
  for (const std::string& args : cases) {
    const CliRun r = run(args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_TRUE(r.out.empty()) << args;
  }
}
