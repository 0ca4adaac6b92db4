// Shared by the proofs/*_check.cpp executables: records what each part of a check covered and prints the
// verdict line the audit's suite stage parses: `proof: <NN_name>: <verdict>: <coverage text>`.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace kvaudit::proofs {

// One per check executable. Parts record coverage as they finish; the final Verdict test decides.
class ProofReport {
 public:
  static ProofReport& get() {
    static ProofReport r;
    return r;
  }
  // A part finished its assertions; `text` says what it covered (domain sizes, instance counts).
  void cover(const std::string& part, const std::string& text) {
    if (!covered_.count(part)) order_.push_back(part);
    covered_[part] = text;
    std::printf("[coverage] %s: %s\n", part.c_str(), text.c_str());
    std::fflush(stdout);
  }
  bool has(const std::string& part) const { return covered_.count(part) > 0; }

  // Prints the verdict line and asserts it. The claimed verdict stands only if every required part ran and
  // recorded coverage and no test of this executable failed; anything else prints `inconclusive` and fails.
  void conclude(const std::string& name, const std::string& claimed, const std::vector<std::string>& required) {
    std::string missing;
    for (const auto& r : required)
      if (!covered_.count(r)) missing += (missing.empty() ? "" : ", ") + r;
    const int failed = ::testing::UnitTest::GetInstance()->failed_test_count();
    std::string text;
    for (const auto& p : order_) text += (text.empty() ? "" : "; ") + p + ": " + covered_.at(p);
    std::string verdict = claimed;
    if (!missing.empty() || failed > 0) {
      verdict = "inconclusive";
      text = (failed > 0 ? std::to_string(failed) + " failed test(s); " : std::string()) +
             (missing.empty() ? std::string() : "parts not run: " + missing + "; ") + text;
    }
    std::printf("proof: %s: %s: %s\n", name.c_str(), verdict.c_str(), text.c_str());
    std::fflush(stdout);
    EXPECT_EQ(verdict, claimed) << "the check did not establish its verdict";
  }

 private:
  std::map<std::string, std::string> covered_;
  std::vector<std::string> order_;
};

inline ProofReport& report() { return ProofReport::get(); }

}  // namespace kvaudit::proofs
