// Check of proofs/08_budget_arithmetic.md: the exact budget max(1, floor((1-rho)T)) and kvpress's float budget
// max(1, int(T*(1-rho))) differ exactly when N = (1-rho)T is an integer >= 2 and T*delta > 2^(ceil(log2 N)-54),
// delta = (1-rho) - fl(1 - fl(rho)); then the float budget is N - 1. Exhaustive over T <= 10^6 for every
// two-decimal rho in 0.01..0.99, in exact integer arithmetic.
#include <gtest/gtest.h>

#include <boost/multiprecision/cpp_int.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "oracle/chunk_selection.h"
#include "proofs/proof_report.h"

namespace {
using kvaudit::Index;
using kvaudit::proofs::report;
using BigInt = boost::multiprecision::cpp_int;

constexpr Index kMaxTokens = 1'000'000;

// rho = a / 100 as Python reads "0.aa": the double nearest, then d = fl(1 - rho_d) as Python computes 1 - rho.
struct Rho {
  int a = 0;
  std::string text;
  double value = 0.0, d = 0.0;
  // d = D * 2^-s exactly (D odd or the 53-bit significand), and X = (100 - a) 2^s - 100 D, so that
  // delta = (1 - rho) - d = X / (100 * 2^s) exactly.
  std::int64_t D = 0;
  int s = 0;
  BigInt X;
};

Rho make_rho(int a) {
  Rho r;
  r.a = a;
  char buf[8];
  std::snprintf(buf, sizeof buf, "0.%02d", a);
  r.text = buf;
  r.value = std::strtod(buf, nullptr);
  r.d = 1.0 - r.value;
  int e = 0;
  const double m = std::frexp(r.d, &e);             // d = m 2^e, m in [0.5, 1)
  r.D = static_cast<std::int64_t>(std::ldexp(m, 53));  // exact: m has 53 significant bits
  r.s = 53 - e;
  r.X = BigInt(100 - a) * (BigInt(1) << r.s) - BigInt(100) * r.D;
  return r;
}

int ceil_log2(std::int64_t n) {
  int c = 0;
  while ((std::int64_t{1} << c) < n) ++c;
  return c;
}

// The closed form of the statement: divergence iff N = (1-rho)T in Z, N >= 2, T delta > 2^(c-54), c = ceil(log2 N).
// T delta = T X / (100 2^s), so the test is T X 2^54 > 100 2^(s + c), in exact integers.
bool predicted_divergence(const Rho& r, Index T) {
  if ((static_cast<std::int64_t>(100 - r.a) * T) % 100 != 0) return false;
  const std::int64_t N = static_cast<std::int64_t>(100 - r.a) * T / 100;
  if (N < 2 || r.X <= 0) return false;
  const int c = ceil_log2(N);
  return BigInt(T) * r.X * (BigInt(1) << 54) > BigInt(100) * (BigInt(1) << (r.s + c));
}

double theta(const Rho& r) {  // (1 - rho) 2^-53 / delta, display only
  const double delta = r.X.convert_to<double>() / (100.0 * std::ldexp(1.0, r.s));
  return (1.0 - r.a / 100.0) * std::ldexp(1.0, -53) / delta;
}

TEST(Proof08, ClosedFormMatchesEveryTUpToAMillion) {
  long evaluations = 0, divergences = 0, delta_positive = 0, never = 0;
  std::string table;
  for (int a = 1; a <= 99; ++a) {
    const Rho r = make_rho(a);
    delta_positive += r.X > 0;
    Index first = 0, count = 0;
    for (Index T = 1; T <= kMaxTokens; ++T) {
      const Index exact = std::max<Index>(1, static_cast<Index>((100 - a) * T / 100));
      const Index flt = kvaudit::oracle::kvpress_token_budget(T, r.value);
      ++evaluations;
      const bool differ = exact != flt;
      // Only integer products can diverge; test the closed form there, and require agreement elsewhere.
      if (differ != (((100 - a) * T % 100 == 0) ? predicted_divergence(r, T) : false)) {
        FAIL() << "rho " << r.text << " T " << T << ": exact " << exact << " float " << flt
               << " but the closed form predicts " << (differ ? "agreement" : "divergence");
      }
      if (differ) {
        ASSERT_EQ(flt, exact - 1) << "a divergence is always one token short";
        if (!first) first = T;
        ++count;
      }
    }
    divergences += count;
    if (count == 0) ++never;
    if (a % 5 == 0) {
      char line[200];
      std::snprintf(line, sizeof line, "rho=%s delta%s0 theta=%.4g first_T=%lld count=%lld", r.text.c_str(),
                    r.X > 0 ? ">" : (r.X == 0 ? "=" : "<"), r.X > 0 ? theta(r) : INFINITY,
                    static_cast<long long>(first), static_cast<long long>(count));
      std::printf("[08] %s\n", line);
      table += std::string(table.empty() ? "" : ", ") + r.text + "->" + (first ? std::to_string(first) : "none");
    }
  }
  ASSERT_GT(divergences, 0);  // the comparison is not vacuous
  report().cover("exhaustive", std::to_string(evaluations) + " (T, rho) pairs, T=1.." + std::to_string(kMaxTokens) +
                                   ", rho=0.01..0.99: " + std::to_string(divergences) + " divergences, all predicted, all " +
                                   "float = exact - 1; " + std::to_string(99 - never) + " of 99 rho diverge somewhere (" +
                                   std::to_string(delta_positive) + " have delta > 0); smallest T on the 0.05 grid: " + table);
}

// The smallest counterexamples written in the Markdown, pinned.
TEST(Proof08, SmallestDivergencesOnTheGrid) {
  struct Case { const char* rho; Index T, exact, flt; };
  const Case cases[] = {{"0.3", 90, 63, 62}, {"0.55", 60, 27, 26}, {"0.65", 180, 63, 62}, {"0.8", 10, 2, 1}, {"0.9", 20, 2, 1}};
  for (const Case& c : cases) {
    const double v = std::strtod(c.rho, nullptr);
    EXPECT_EQ(kvaudit::oracle::exact_token_budget(c.T, c.rho), c.exact) << c.rho;
    EXPECT_EQ(kvaudit::oracle::kvpress_token_budget(c.T, v), c.flt) << c.rho;
    for (Index t = 1; t < c.T; ++t)
      EXPECT_EQ(kvaudit::oracle::exact_token_budget(t, c.rho), kvaudit::oracle::kvpress_token_budget(t, v))
          << c.rho << " T " << t << " is smaller than the pinned first divergence";
  }
  // The oracle's own divergence scan agrees with the closed form on T <= 2000 (cpp_rational path).
  std::vector<std::string> grid;
  for (int a = 5; a <= 95; a += 5) grid.push_back(make_rho(a).text);
  const auto found = kvaudit::oracle::budget_divergences(1, 2000, grid);
  long predicted = 0;
  for (int a = 5; a <= 95; a += 5)
    for (Index T = 1; T <= 2000; ++T) predicted += predicted_divergence(make_rho(a), T);
  EXPECT_EQ(static_cast<long>(found.size()), predicted);
  for (const auto& f : found) {
    EXPECT_EQ(f.kvpress, f.exact - 1);
    EXPECT_TRUE(predicted_divergence(make_rho(std::atoi(f.rho_text.c_str() + 2)), f.tokens)) << f.rho_text << " " << f.tokens;
  }
  report().cover("pinned", "5 smallest divergences pinned with no divergence below them; oracle budget_divergences on T<=2000 "
                           "x 19 grid values agrees (" + std::to_string(found.size()) + " divergences)");
}

TEST(Proof08, Verdict) {
  report().conclude("08_budget_arithmetic", "proved-and-checked", {"exhaustive", "pinned"});
}

}  // namespace
