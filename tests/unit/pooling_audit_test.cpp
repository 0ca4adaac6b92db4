// The pooling audit stage on a synthetic dump: it runs within the quick time budget, fills every table from
// real-row code paths, and reports missing inputs honestly when there are no dumps.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "audit/pooling_findings.h"

using namespace kvaudit;

namespace {
io::Tensor tensor(std::vector<Index> shape, std::mt19937_64& rng, double sd) {
  io::Tensor t;
  t.shape = shape;
  t.dtype = "F32";
  Index size = 1;
  for (Index s : shape) size *= s;
  std::normal_distribution<float> z(0.0f, static_cast<float>(sd));
  for (Index i = 0; i < size; ++i) t.values.push_back(z(rng));
  return t;
}

io::PromptDump synthetic_dump() {
  std::mt19937_64 rng(5);
  io::PromptDump d;
  d.name = "synthetic";
  d.kind = "qa";
  d.tokens = 256, d.layers = 2, d.q_heads = 3, d.kv_heads = 1, d.window = 16;
  for (const char* name : {"attention.last_query", "attention.window_mean"}) {
    io::Tensor t = tensor({2, 3, 256}, rng, 2.0);
    for (std::size_t r = 0; r < 6; ++r) {  // softmax rows with a sink at position 0
      float* row = t.values.data() + r * 256;
      row[0] += 6.0f;
      double s = 0.0;
      for (int i = 0; i < 256; ++i) s += (row[i] = std::exp(row[i]));
      for (int i = 0; i < 256; ++i) row[i] = static_cast<float>(row[i] / s);
    }
    d.tensors[name] = t;
  }
  d.tensors["qkv.layer1.query"] = tensor({3, 16, 8}, rng, 1.0);
  d.tensors["qkv.layer1.key"] = tensor({1, 256, 8}, rng, 1.0);
  d.tensors["qkv.layer1.value"] = tensor({1, 256, 8}, rng, 1.0);
  return d;
}
}  // namespace

TEST(PoolingAudit, RunsOnSyntheticDump) {
  const std::vector<io::PromptDump> dumps{synthetic_dump()};
  audit::AuditContext ctx;
  ctx.quick = true;
  ctx.dumps = &dumps;
  const audit::Section s = audit::pooling_section(ctx);
  EXPECT_EQ(s["section"], "pooling");
  EXPECT_EQ(s["status"], "ran");
  EXPECT_GT(s["summary"]["instances"].get<long>(), 0);
  // Cosine table (third table) has uniform, top-k, greedy and exact rows.
  const auto& rows = s["tables"][2]["rows"];
  ASSERT_FALSE(rows.empty());
  std::set<std::string> methods;
  for (const auto& r : rows) methods.insert(r[2].get<std::string>());
  EXPECT_TRUE(methods.count("uniform") && methods.count("top-k eviction") && methods.count("greedy + log-mass prior") &&
              methods.count("exact + log-mass prior"));
  for (const auto& r : rows) {
    const double e = r[3].get<double>();
    EXPECT_TRUE(e >= 0.0 && e <= 2.0) << r.dump();
  }
  EXPECT_EQ(s["claims"].size(), 4u);
  std::cout << s.dump(1) << "\n";
}

TEST(PoolingAudit, MissingInputsAreReportedNotHidden) {
  audit::AuditContext ctx;
  ctx.quick = true;
  const audit::Section s = audit::pooling_section(ctx);
  EXPECT_EQ(s["status"], "missing-inputs");
  EXPECT_EQ(s["summary"]["instances"].get<long>(), 0);
}
