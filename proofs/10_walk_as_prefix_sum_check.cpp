// Executable check of proofs/10_walk_as_prefix_sum.md: the sequential walks (EG-ChunkKV's chunk walk and
// Page-EntroKV's page walk) equal their prefix-sum closed forms on every small instance.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace {

// kvpress's loop, literally: per walk position the tokens taken, and the budget left for the top-up.
std::vector<int> walk_takes(const std::vector<int>& n, const std::vector<bool>& gated, int r, int L, int& left) {
  std::vector<int> take(n.size(), 0);
  int b = L;
  for (std::size_t k = 0; k < n.size(); ++k) {
    if (b <= 0) break;
    int kept = std::min(n[k], b);
    if (gated[k]) kept = std::min(kept, r);
    take[k] = kept;
    b -= kept;
  }
  left = b;
  return take;
}

// The closed form: t_k = min(c_k, max(0, L - P_k)), R = max(0, L - P_{m+1}).
std::vector<int> prefix_takes(const std::vector<int>& n, const std::vector<bool>& gated, int r, int L, int& left) {
  std::vector<int> take(n.size());
  int P = 0;
  for (std::size_t k = 0; k < n.size(); ++k) {
    const int c = gated[k] ? std::min(n[k], r) : n[k];
    take[k] = std::min(c, std::max(0, L - P));
    P += c;
  }
  left = std::max(0, L - P);
  return take;
}

TEST(WalkAsPrefixSum, ChunkWalkEqualsClosedFormExhaustively) {
  long cases = 0;
  for (int m = 1; m <= 5; ++m) {
    std::vector<int> n(static_cast<std::size_t>(m), 1);
    // Every size vector in {1..4}^m and every gate vector in {0,1}^m.
    for (;;) {
      int total = 0;
      for (int v : n) total += v;
      for (int mask = 0; mask < (1 << m); ++mask) {
        std::vector<bool> gated(static_cast<std::size_t>(m));
        for (int k = 0; k < m; ++k) gated[static_cast<std::size_t>(k)] = (mask >> k) & 1;
        for (int r = 1; r <= 4; ++r) {
          for (int L = 1; L <= total; ++L) {
            int left_walk = 0, left_prefix = 0;
            const auto a = walk_takes(n, gated, r, L, left_walk);
            const auto b = prefix_takes(n, gated, r, L, left_prefix);
            ASSERT_EQ(a, b) << "m=" << m << " r=" << r << " L=" << L;
            ASSERT_EQ(left_walk, left_prefix);
            int sum = left_walk;
            for (int t : a) sum += t;
            ASSERT_EQ(sum, L);  // budget identity
            ++cases;
          }
        }
      }
      int k = 0;
      while (k < m && n[static_cast<std::size_t>(k)] == 4) n[static_cast<std::size_t>(k++)] = 1;
      if (k == m) break;
      ++n[static_cast<std::size_t>(k)];
    }
  }
  std::cout << "[ proof 10 ] chunk walk: " << cases << " instances\n";
  EXPECT_GT(cases, 100000);
}

// Page walk: sizes all P except possibly one partial page, anywhere in the walk order.
TEST(WalkAsPrefixSum, PageWalkEqualsClosedFormExhaustively) {
  long cases = 0;
  for (int pages = 1; pages <= 7; ++pages)
    for (int P = 1; P <= 5; ++P)
      for (int partial = 0; partial < P; ++partial)  // 0: no partial page
        for (int at = 0; at < pages; ++at)
          for (int L = 1; L <= pages * P; ++L)
            for (bool skip : {true, false}) {
              std::vector<int> s(static_cast<std::size_t>(pages), P);
              if (partial > 0) s[static_cast<std::size_t>(at)] = partial;
              std::vector<bool> walk(s.size(), false), closed(s.size(), false);
              int retained = 0;
              for (std::size_t k = 0; k < s.size(); ++k) {
                if (retained + s[k] <= L) walk[k] = true, retained += s[k];
                else if (!skip) break;
              }
              int Pk = 0, spent = 0;
              std::vector<int> prefix(s.size());
              for (std::size_t k = 0; k < s.size(); ++k) {
                prefix[k] = Pk;
                if (Pk + s[k] <= L) spent += s[k];
                Pk += s[k];
              }
              for (std::size_t k = 0; k < s.size(); ++k) {
                const bool fits = prefix[k] + s[k] <= L;
                closed[k] = fits || (skip && spent + s[k] <= L);
              }
              ASSERT_EQ(walk, closed) << "pages=" << pages << " P=" << P << " partial=" << partial << " at=" << at
                                      << " L=" << L << " skip=" << skip;
              ++cases;
            }
  std::cout << "[ proof 10 ] page walk: " << cases << " instances\n";
  EXPECT_GT(cases, 1000);
}

}  // namespace
