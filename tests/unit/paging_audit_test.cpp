// The paging audit stage on a synthetic dump with a planted needle: it runs, finds no violation, reports the
// union overhead, needle recall under both of the paper's criteria, the masquerade count and the paper's masquerade
// metric, and says "missing-inputs" without dumps.
#include <gtest/gtest.h>

#include <random>

#include "audit/paging_findings.h"

using kvaudit::Index;

namespace {

// (layers, 6 query heads, T) with G = 3: head 0 of every group is a retrieval head on the needle; head 1 is a
// sink head (most mass on the first 4 positions, the rest diffuse); head 2 is diffuse with a decoy page.
kvaudit::io::PromptDump synthetic_dump(Index layers, Index T, Index needle_begin, Index needle_end) {
  kvaudit::io::PromptDump d;
  d.name = "needle";
  d.kind = "needle";
  d.file = "synthetic";
  d.tokens = T, d.layers = layers, d.q_heads = 6, d.kv_heads = 2, d.window = 64;
  d.needles = {kvaudit::io::Needle{needle_begin, needle_end, std::nullopt, std::nullopt}};
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  kvaudit::io::Tensor t;
  t.shape = {layers, 6, T};
  t.dtype = "F32";
  for (Index l = 0; l < layers; ++l)
    for (Index h = 0; h < 6; ++h) {
      std::vector<double> w(static_cast<std::size_t>(T));
      for (Index i = 0; i < T; ++i) w[i] = 0.01 * u(rng);
      for (Index i = 0; i < 4; ++i) w[i] += (h % 3 == 1) ? 5.0 : 0.5;
      if (h % 3 == 0)
        for (Index i = needle_begin; i < needle_end; ++i) w[i] += 0.2;
      if (h % 3 == 2)
        for (Index i = 32; i < 96; ++i) w[i] += 0.02;
      double s = 0;
      for (double v : w) s += v;
      for (double v : w) t.values.push_back(static_cast<float>(v / s));
    }
  d.tensors["attention.window_mean"] = t;
  return d;
}

}  // namespace

TEST(PagingAudit, MissingInputs) {
  kvaudit::audit::AuditContext ctx;
  std::vector<kvaudit::io::PromptDump> none;
  ctx.dumps = &none;
  auto s = kvaudit::audit::paging_section(ctx);
  EXPECT_EQ(s["status"], "missing-inputs");
  EXPECT_EQ(s["section"], "paging");
}

TEST(PagingAudit, SyntheticNeedleDump) {
  std::vector<kvaudit::io::PromptDump> dumps = {synthetic_dump(3, 400, 200, 216)};
  kvaudit::audit::AuditContext ctx;
  ctx.quick = true;
  ctx.dumps = &dumps;
  auto s = kvaudit::audit::paging_section(ctx);
  ASSERT_EQ(s["status"], "ran") << s.dump(2);
  for (const auto& f : s["findings"]) ADD_FAILURE() << f.dump();
  EXPECT_EQ(s["summary"]["group_size"], 3);
  EXPECT_EQ(s["summary"]["union_identity_violations"], 0);
  EXPECT_GT(s["summary"]["union_identity_checks"].get<int>(), 0);
  const double max2 = s["summary"]["union_overhead_token_max_2pct"];
  EXPECT_GE(max2, 1.0);
  EXPECT_LE(max2, 3.0);
  // The sink head has the lowest raw H2 in every group; isolation removes that.
  EXPECT_EQ(s["summary"]["masquerade_without_isolation"], 6);
  EXPECT_EQ(s["summary"]["masquerade_with_isolation"], 0);
  // The paper's metric: one sink head and two contextual heads per (layer, group). Raw entropy makes the sink head
  // the heaviest (ratio > 1); isolation leaves it a diffuse residual, lighter than the needle head (ratio < 1).
  EXPECT_EQ(s["summary"]["masquerade_paper_sink_heads"], 6);
  EXPECT_EQ(s["summary"]["masquerade_paper_contextual_heads"], 12);
  EXPECT_GT(s["summary"]["masquerade_paper_ratio_raw"].get<double>(), 1.0);
  EXPECT_LT(s["summary"]["masquerade_paper_ratio_isolated"].get<double>(), 1.0);
  ASSERT_EQ(s["claims"].size(), 4u);
  // The claims are typed: union = 1.000 holds by construction with its proof; no stand-in row settles its claim.
  for (const auto& c : s["claims"]) {
    if (c["claim"].get<std::string>().find("exactly 1.000") != std::string::npos) {
      EXPECT_EQ(c["kind"], "by-construction");
      EXPECT_EQ(c["proof"], "proofs/05_page_accounting.md");
      EXPECT_EQ(c["verdict"], "by-construction") << c.dump();
      EXPECT_GT(c["observations"].get<Index>(), 0);
    }
    if (c["protocol"] == "stand-in") {
      EXPECT_TRUE(c["verdict"] != "confirmed" && c["verdict"] != "refuted") << c.dump();
    }
    if (c["kind"] == "statistical") {
      EXPECT_TRUE(c.contains("interval")) << c.dump();
    }
    // The seed-004 rows use the paper's own protocols; only the model (and the needle) stands in.
    const std::string claim = c["claim"], stand_in = c.value("stand_in", "");
    if (claim.find("13x") != std::string::npos) {
      EXPECT_NE(stand_in.find("the paper's own masquerade metric"), std::string::npos) << c.dump();
      EXPECT_NE(c["measured"].get<std::string>().find("2.10x raw"), std::string::npos) << c.dump();
      EXPECT_EQ(c["source_observations"], 1008);
    }
    if (claim.find("needle recall") != std::string::npos) {
      EXPECT_NE(stand_in.find("preset `paper`"), std::string::npos) << c.dump();
      EXPECT_EQ(c["measured"].get<std::string>().rfind("paper preset, pooled-selection", 0), 0u) << c.dump();
    }
    if (claim.find("4.75x") != std::string::npos) {
      EXPECT_NE(stand_in.find("the paper's own union-overhead definition"), std::string::npos) << c.dump();
    }
  }
  // The needle criteria: both configurations, both criteria; the planted retrieval head keeps the needle in every
  // (layer, group) under both, so the all-layer reading keeps it too.
  bool criteria = false;
  for (const auto& t : s["tables"])
    if (t["title"].get<std::string>().rfind("Needle kept", 0) == 0) {
      criteria = true;
      ASSERT_EQ(t["rows"].size(), 4u) << t.dump();  // (kvaudit, paper) x (all depths, depth not recorded)
      for (const auto& r : t["rows"]) {
        EXPECT_EQ(r[2], 6) << "pooled units: 3 layers x 2 groups";
        EXPECT_EQ(r[3], 6) << "entropy keeps the needle in every unit: " << r.dump();
        EXPECT_EQ(r[7], 1) << "all-layer: entropy keeps it everywhere: " << r.dump();
        EXPECT_EQ(r[9], 6) << "leniently too: entropy keeps a needle page in every unit: " << r.dump();
      }
    }
  EXPECT_TRUE(criteria);
  // The needle row: entropy pooling keeps the whole needle in every (layer, group).
  bool found = false;
  for (const auto& t : s["tables"])
    if (t["title"].get<std::string>().rfind("Needle retention", 0) == 0) {
      found = true;
      EXPECT_EQ(t["rows"][0][6], "100.0") << "entropy recall %";
    }
  EXPECT_TRUE(found);
  ASSERT_EQ(s["charts"].size(), 1u);
  EXPECT_EQ(s["charts"][0]["series"][0]["points"].size(), 5u);
}
