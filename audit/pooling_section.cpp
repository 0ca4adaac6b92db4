// The "pooling" audit stage (see pooling_findings.h): gap and tail-bound statistics on real attention rows,
// shrunk counterexamples, the K/V pooling cosine-error table and the seed's synthetic 16 -> 6 setup.
//
// Choices (docs/pooling.md): a row of attention.last_query / attention.window_mean (length T) is pre-bucketed
// into n = 64 equal-width contiguous buckets (bucket mass = sum), so the exact solver works on n = 64; groups
// are unions of buckets. For the cosine table p is at token level: the softmax of the last window query over
// the T - W prefix tokens (the part a cache would compress), computed from qkv.layer{L}.query/key; partitions
// are chosen on its 64-bucket aggregation and K/V are pooled at token level with token weights p_i; every
// window query is scored against the full prefix attention output.
#include <algorithm>
#include <array>
#include <limits>
#include <cmath>
#include <iterator>
#include <map>
#include <random>
#include <sstream>

#include "audit/pooling_findings.h"
#include "audit/claims.h"
#include "audit/parallel_rows.h"
#include "audit/statistics.h"
#include "core/pooling/bucket_masses.h"
#include "core/pooling/greedy_partition.h"
#include "core/pooling/kv_pool.h"
#include "core/exact/log_linear_sign.h"
#include "oracle/partition_arith.h"
#include "oracle/partition_enumerate.h"
#include "oracle/partition_exact.h"
#include "oracle/partition_merge_delta.h"
#include "oracle/partition_tail_bound.h"

namespace kvaudit::audit {

namespace {
using nlohmann::json;
using oracle::TailOutcome;
using oracle::TailReading;

constexpr Index kBuckets = 64;
constexpr double kEps = 1e-8;
// Issue 16: every exact answer's proven bracket [lower, upper] must be at most this wide, or be reported.
constexpr double kBracketTarget = 1e-6;  // the seed's epsilon in K'_k = sum p_i K_i / (q_k + eps)

std::vector<double> budgets(Index m) {
  const double l = std::log2(static_cast<double>(m));
  return {0.5 * l, 0.75 * l, l};
}

const io::Tensor* find_tensor(const io::PromptDump& d, const std::string& name) {
  auto it = d.tensors.find(name);
  return it == d.tensors.end() ? nullptr : &it->second;
}

struct TailTally {
  std::map<std::string, long> counts;  // outcome -> count
  void add(TailOutcome o) { ++counts[oracle::to_string(o)]; }
  json to_json() const { return counts; }
};

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

// Token-level cuts from bucket-level cuts.
std::vector<Index> to_tokens(const std::vector<Index>& bucket_cuts, Index tokens, Index buckets) {
  std::vector<Index> out;
  for (Index c : bucket_cuts) out.push_back((c * tokens + buckets - 1) / buckets);  // first token of bucket c
  return out;
}

pooling::Matrix slice(const io::Tensor& t, Index head, Index rows) {
  const Index d = t.shape[2];
  pooling::Matrix m(rows, d);
  const float* base = t.values.data() + head * t.shape[1] * d;
  for (Index r = 0; r < rows; ++r)
    for (Index c = 0; c < d; ++c) m(r, c) = base[r * d + c];
  return m;
}

struct CosKey {
  Index m;
  double R;
  std::string method;
  bool operator<(const CosKey& o) const { return std::tie(m, R, method) < std::tie(o.m, o.R, o.method); }
};
struct CosAcc {
  std::vector<double> last, window;
  long infeasible = 0;
};

// Seed synthetic setup: n = 16, d = 24, m = 6, 30 single-query trials; K, V, query ~ N(0, 1), logits K q / sqrt(d).
json seed_synthetic(std::uint64_t seed) {
  const Index n = 16, d = 24, m = 6, trials = 30;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  json rows = json::array();
  long tail_total = 0, tail_held[2] = {0, 0};
  for (double R : budgets(m)) {
    std::vector<double> uni, ent_prior, ent_plain, gre_prior;
    for (Index t = 0; t < trials; ++t) {
      pooling::Matrix K(n, d), V(n, d);
      Eigen::VectorXd q(d);
      for (Index i = 0; i < n; ++i)
        for (Index c = 0; c < d; ++c) K(i, c) = z(rng), V(i, c) = z(rng);
      for (Index c = 0; c < d; ++c) q[c] = z(rng);
      const double scale = 1.0 / std::sqrt(static_cast<double>(d));
      const std::vector<double> p = pooling::attention_probs(K, q, scale);
      const pooling::PooledCache full{K, V, {}};
      const Eigen::VectorXd ref = pooling::attention_output(full, q, scale);
      const auto ex = oracle::enumerate_partitions({p, R, m});
      const auto g = pooling::greedy_partition(p, m, R);
      uni.push_back(pooling::cosine_error(ref, pooling::attention_output(
                                                   pooling::pool_uniform(K, V, m, pooling::Prior::None), q, scale)));
      if (ex.feasible) {
        ent_prior.push_back(pooling::cosine_error(
            ref, pooling::attention_output(pooling::pool_weighted(K, V, p, ex.cuts, kEps, pooling::Prior::LogMass), q, scale)));
        ent_plain.push_back(pooling::cosine_error(
            ref, pooling::attention_output(pooling::pool_weighted(K, V, p, ex.cuts, kEps, pooling::Prior::None), q, scale)));
      }
      gre_prior.push_back(pooling::cosine_error(
          ref, pooling::attention_output(pooling::pool_weighted(K, V, p, g.cuts, kEps, pooling::Prior::LogMass), q, scale)));
      const GapRecord r = measure_gap({p, m, R}, 1'000'000, 1.0);
      for (int k = 0; k < 2; ++k) {
        const double b = oracle::tail_bound(p, R, k == 0 ? TailReading::PlainH : TailReading::BinaryEntropy);
        if (r.exact_feasible)
          tail_held[k] += oracle::judge_tail(b, r.exact_bits, r.exact_upper, r.greedy_feasible, r.greedy_bits,
                                             r.greedy_certified_optimal) == TailOutcome::Held;
      }
      tail_total += r.exact_feasible;
    }
    rows.push_back({R, mean(uni), mean(ent_prior), mean(ent_plain), mean(gre_prior), ent_prior.size()});
  }
  return {{"rows", rows}, {"tail_instances", tail_total}, {"tail_held_plain_h", tail_held[0]},
          {"tail_held_binary", tail_held[1]}};
}

// What a prompt holds for the stage to verify: attention rows (2 tensors x layers x query heads) and Q/K/V
// layer x query head pairs for the cosine table.
struct PoolingExtent {
  long rows = 0, cosine_heads = 0;
};

// Q/K/V layers usable for the cosine table: "qkv.layer{L}.query" with its key and value, P = T - W >= 64.
std::vector<std::string> cosine_tensors(const io::PromptDump& d) {
  std::vector<std::string> out;
  for (const auto& [name, qt] : d.tensors) {
    if (name.rfind("qkv.layer", 0) != 0 || name.size() < 6 || name.substr(name.size() - 6) != ".query") continue;
    const std::string prefix = name.substr(0, name.size() - 6);
    const io::Tensor* kt = find_tensor(d, prefix + ".key");
    const io::Tensor* vt = find_tensor(d, prefix + ".value");
    if (!kt || !vt || qt.shape.size() != 3 || kt->shape.size() != 3) continue;
    if (kt->shape[1] - qt.shape[1] < kBuckets) continue;
    out.push_back(name);
  }
  return out;
}

PoolingExtent pooling_extent(const io::PromptDump& d) {
  PoolingExtent e;
  for (const char* tname : {"attention.last_query", "attention.window_mean"})
    if (const io::Tensor* t = find_tensor(d, tname); t && t->shape.size() == 3) e.rows += t->shape[0] * t->shape[1];
  for (const auto& name : cosine_tensors(d)) e.cosine_heads += d.tensors.at(name).shape[0];
  return e;
}

// One unit of the stage's work on real data: an attention row (its 64 bucket masses) or one query head of a
// Q/K/V layer for the cosine table.
struct PoolingJob {
  enum class Kind { Row, CosineHead } kind = Kind::Row;
  const io::PromptDump* dump = nullptr;
  std::string tensor;
  Index layer = 0, head = 0;
  std::vector<double> p;  // rows: bucket masses
};

// The jobs, in report order (prompt, then its rows, then its cosine heads). What is sampled (docs/pooling.md):
// a full run takes layers 0, L/2 and L-1, head 0, of both attention tensors of every prompt, and query heads 0
// and 1 of every Q/K/V layer; --exhaustive every layer and head; --quick the last layer's
// attention.last_query row and one head of each model's first prompt.
std::vector<PoolingJob> pooling_jobs(const std::vector<io::PromptDump>& dumps, bool quick, bool exhaustive) {
  std::vector<PoolingJob> jobs;
  for (auto it = dumps.begin(); it != dumps.end(); ++it) {
    const io::PromptDump& d = *it;
    const bool first_of_model = it == dumps.begin() || std::prev(it)->model != d.model;
    if (quick && !first_of_model) continue;
    for (const char* tname : {"attention.last_query", "attention.window_mean"}) {
      if (quick && std::string(tname) != "attention.last_query") continue;
      const io::Tensor* t = find_tensor(d, tname);
      if (!t || t->shape.size() != 3) continue;
      const Index L = t->shape[0], H = t->shape[1], T = t->shape[2];
      std::vector<Index> layers;
      if (exhaustive) for (Index l = 0; l < L; ++l) layers.push_back(l);
      else if (quick) layers = {L - 1};
      else for (Index l : {Index{0}, L / 2, L - 1}) if (layers.empty() || layers.back() != l) layers.push_back(l);
      for (Index l : layers)
        for (Index h = 0; h < (exhaustive ? H : 1); ++h) {
          const std::span<const float> row(t->values.data() + (l * H + h) * T, static_cast<std::size_t>(T));
          jobs.push_back({PoolingJob::Kind::Row, &d, tname, l, h, pooling::bucket_masses(row, kBuckets)});
        }
    }
    for (const auto& name : cosine_tensors(d)) {
      const Index H = d.tensors.at(name).shape[0];
      for (Index h = 0; h < (exhaustive ? H : std::min<Index>(quick ? 1 : 2, H)); ++h)
        jobs.push_back({PoolingJob::Kind::CosineHead, &d, name, 0, h, {}});
    }
  }
  return jobs;
}

// One query head of a Q/K/V layer: cosine errors of every pooling method against the full prefix attention, and
// the exact solver's bracket on the 64-bucket aggregation of its last query's attention.
struct CosineSample {
  CosKey key;
  double last = 0.0, window = 0.0;
  bool feasible = true;
};
struct BracketNote {
  double width = 0.0;
  std::string source;
  json where;
};
struct CosineHead {
  std::vector<CosineSample> samples;
  std::vector<BracketNote> brackets;
  std::vector<double> bucket_masses;
};

CosineHead measure_cosine_head(const io::PromptDump& d, const std::string& name, Index h, long nodes) {
  const double secs = std::numeric_limits<double>::infinity();
  const io::Tensor& qt = d.tensors.at(name);
  const std::string prefix = name.substr(0, name.size() - 6);
  const io::Tensor& kt = *find_tensor(d, prefix + ".key");
  const io::Tensor& vt = *find_tensor(d, prefix + ".value");
  const Index W = qt.shape[1], T = kt.shape[1], dim = qt.shape[2];
  const Index P = T - W;
  const Index group = std::max<Index>(1, qt.shape[0] / kt.shape[0]);
  const double scale = 1.0 / std::sqrt(static_cast<double>(dim));
  CosineHead out;
  const pooling::Matrix K = slice(kt, h / group, P), V = slice(vt, h / group, P);
  const pooling::Matrix Q = slice(qt, h, W);
  const Eigen::VectorXd qlast = Q.row(W - 1).transpose();
  const std::vector<double> ptok = pooling::attention_probs(K, qlast, scale);
  std::vector<double>& pb = out.bucket_masses;
  pb.assign(static_cast<std::size_t>(kBuckets), 0.0);
  for (Index i = 0; i < P; ++i) pb[static_cast<std::size_t>(i * kBuckets / P)] += ptok[i];
  const pooling::PooledCache full{K, V, {}};
  std::vector<Eigen::VectorXd> refs;
  for (Index w = 0; w < W; ++w) refs.push_back(pooling::attention_output(full, Q.row(w).transpose(), scale));
  auto score = [&](const CosKey& key, const pooling::PooledCache& c, bool feasible) {
    std::vector<double> errs;
    for (Index w = 0; w < W; ++w)
      errs.push_back(pooling::cosine_error(refs[w], pooling::attention_output(c, Q.row(w).transpose(), scale)));
    out.samples.push_back({key, errs.back(), mean(errs), feasible});
  };
  for (Index m : {kBuckets / 8, kBuckets / 4, kBuckets / 2}) {
    score({m, -1.0, "uniform"}, pooling::pool_uniform(K, V, m, pooling::Prior::None), true);
    score({m, -1.0, "uniform + log-width prior"}, pooling::pool_uniform(K, V, m, pooling::Prior::LogMass), true);
    score({m, -1.0, "top-k eviction"}, pooling::evict_topk(K, V, ptok, m), true);
    for (double R : budgets(m)) {
      const auto g = pooling::greedy_partition(pb, m, R);
      const auto ex = oracle::solve_exact({pb, R, m}, audit_exact_limits(nodes, secs));
      if (ex.feasible)
        out.brackets.push_back({ex.certified ? 0.0 : ex.bracket_width(), ex.upper_source,
                                {{"model", d.model}, {"prompt", d.name}, {"tensor", "softmax of " + name}, {"head", h},
                                 {"groups", m}, {"R", R}}});
      for (const auto& [label, cuts, feas] :
           {std::tuple{std::string("greedy"), g.cuts, g.feasible}, std::tuple{std::string("exact"), ex.cuts, ex.feasible}}) {
        if (label == "exact" && !ex.feasible) continue;
        const auto tc = to_tokens(cuts, P, kBuckets);
        score({m, R, label + " + log-mass prior"}, pooling::pool_weighted(K, V, ptok, tc, kEps, pooling::Prior::LogMass), feas);
        score({m, R, label + ", no prior"}, pooling::pool_weighted(K, V, ptok, tc, kEps, pooling::Prior::None), feas);
      }
    }
  }
  return out;
}
}  // namespace

RowMeasurement measure_row(const std::vector<double>& p, long max_nodes) {
  const double secs = std::numeric_limits<double>::infinity();  // bounded by node counts alone: same on every machine
  RowMeasurement r;
  // Merge identity on a greedy-like sequence: always merge the first pair (n - 1 steps).
  const auto mb = oracle::merge_bookkeeping(p, std::vector<oracle::MergeStep>(p.size() - 1, {0}));
  r.merge_residual_double = mb.max_residual_double;
  r.merge_residual_extended = mb.max_residual_extended;
  const Index n = static_cast<Index>(p.size());
  for (Index m : {n / 8, n / 4, n / 2})
    for (double R : budgets(m)) {
      r.fixed.push_back({m, R, measure_gap({p, m, R}, max_nodes, secs)});
      // The claim's own (free) form, once per budget of m = n / 8, where the fixed form is feasible.
      if (m == n / 8 && r.fixed.back().gap.exact_feasible) r.free_form.push_back(measure_gap({p, std::nullopt, R}, max_nodes, secs));
    }
  return r;
}

Section pooling_section(const AuditContext& ctx) {
  Section s;
  s["section"] = "pooling";
  s["title"] = "Entropy-budgeted contiguous pooling";
  s["findings"] = json::array();
  s["claims"] = json::array();
  s["tables"] = json::array();
  s["charts"] = json::array();
  const bool have_data = ctx.dumps && !ctx.dumps->empty();
  s["status"] = have_data ? "ran" : "missing-inputs";
  if (!have_data) s["status_reason"] = "no dumps in " + ctx.data_dir + ": real-row statistics not run; synthetic parts ran";
  const exact::ExactSignStats sign_before = exact::exact_sign_stats();

  // ---- Shrunk counterexamples (synthetic, exhaustive over small instances) ----
  ctx.progress("pooling: counterexample search");
  const int max_n = ctx.quick ? 4 : 5, max_w = 2;
  auto greedy_fails = [](const PoolingInstance& inst) {
    const GapRecord r = measure_gap(inst, 1'000'000, 1.0);
    return r.exact_feasible && r.exact_certified && !r.greedy_feasible && !r.greedy_near_budget;
  };
  json counterexamples;
  if (auto ce = smallest_counterexample(greedy_fails, max_n, max_w, false)) {
    const GapRecord r = measure_gap(*ce, 1'000'000, 1.0);
    json c = instance_json(*ce);
    c["exact_bits"] = r.exact_bits;
    c["greedy_bits"] = r.greedy_bits;
    counterexamples["greedy_infeasible"] = c;
    s["findings"].push_back({{"id", "pooling-greedy-infeasible"}, {"rule", "greedy-feasibility"}, {"verdict", to_string(VerdictKind::Violates)},
                             {"message", "greedy (documented reading) ends above R although a feasible m-partition exists"},
                             {"reproduce", "kvaudit partition --probs counterexample.npy --entropy-budget " +
                                               std::to_string(ce->R) + " --groups " + std::to_string(*ce->groups) +
                                               " --solver greedy"},
                             {"counterexample", c}});
  }
  for (int form = 0; form < 2; ++form)
    for (int k = 0; k < 2; ++k) {
      const TailReading reading = k == 0 ? TailReading::PlainH : TailReading::BinaryEntropy;
      auto violated = [&](const PoolingInstance& inst) {
        const GapRecord r = measure_gap(inst, 1'000'000, 1.0);
        if (!r.exact_feasible || !r.exact_certified) return false;
        return oracle::judge_tail(oracle::tail_bound(inst.p, inst.R, reading), r.exact_bits, r.exact_upper,
                                  r.greedy_feasible, r.greedy_bits, r.greedy_certified_optimal) == TailOutcome::Violated;
      };
      const std::string id = std::string("tail-") + (form ? "free" : "fixed-m") + "-" + (k ? "binary" : "plain-h");
      if (auto ce = smallest_counterexample(violated, max_n, max_w, form == 1)) {
        const GapRecord r = measure_gap(*ce, 1'000'000, 1.0);
        json c = instance_json(*ce);
        c["exact_bits"] = r.exact_bits;
        c["greedy_bits"] = r.greedy_bits;
        c["gap"] = r.gap_low;
        c["bound"] = oracle::tail_bound(ce->p, ce->R, reading);
        counterexamples[id] = c;
        s["findings"].push_back({{"id", "pooling-" + id}, {"rule", "tail-bound"}, {"verdict", to_string(VerdictKind::Violates)},
                                 {"message", std::string("greedy error exceeds h(p_down[floor(2^R)+1]) with h read as ") +
                                                 oracle::to_string(reading) + (form ? " (free form)" : " (fixed m)")},
                                 {"reproduce", "kvaudit partition --probs counterexample.npy --entropy-budget " +
                                                   std::to_string(ce->R) +
                                                   (form ? std::string() : " --groups " + std::to_string(*ce->groups)) +
                                                   " --solver exact"},
                                 {"counterexample", c}});
      } else {
        counterexamples[id] = "none up to n=" + std::to_string(max_n) + ", weights <= " + std::to_string(max_w);
      }
    }

  // ---- Seed synthetic 16 -> 6 ----
  ctx.progress("pooling: seed synthetic setup");
  const json synth = seed_synthetic(ctx.seed);
  s["tables"].push_back({{"title", "Seed synthetic setup (n=16, d=24, m=6, 30 trials): mean cosine error"},
                         {"columns", {"R", "uniform", "entropy exact + log-mass prior", "entropy exact, no prior",
                                      "entropy greedy + log-mass prior", "exact-feasible trials"}},
                         {"rows", synth["rows"]}});

  // ---- Real rows: gap and tail bound ----
  std::vector<double> gaps, gaps_high;  // the greedy gap interval [lower - greedy, upper - greedy] per instance
  double max_bracket = 0.0;             // widest exact bracket over every pooling instance solved below
  long over_target = 0;                 // instances whose bracket is wider than kBracketTarget
  std::map<std::string, long> upper_sources;
  json over_target_cases = json::array();  // the first few, with their bucket masses, to reproduce
  auto bracket = [&](double width, const std::string& source, json where, const std::vector<double>& p) {
    max_bracket = std::max(max_bracket, width);
    ++upper_sources[source];
    if (width <= kBracketTarget) return;
    if (over_target++ < 10) {
      where["bracket_bits"] = width;
      where["upper_source"] = source;
      where["p"] = p;
      over_target_cases.push_back(std::move(where));
    }
  };
  long instances = 0, certified = 0, greedy_failed = 0, exact_infeasible = 0;
  TailTally tail_fixed[2], tail_free[2];
  double max_resid_double = 0.0, max_resid_ext = 0.0;
  Index merge_rows = 0;  // real rows whose merge bookkeeping ran
  std::map<CosKey, CosAcc> cos;
  const long nodes = ctx.quick ? 20'000 : 100'000;
  json sampling_rows = json::array();  // per model: what was verified of what there is
  if (have_data) {
    // Measure, in parallel: every job writes its own slot (parallel_rows.h) ...
    const std::vector<PoolingJob> jobs = pooling_jobs(*ctx.dumps, ctx.quick, ctx.exhaustive);
    std::vector<RowMeasurement> row_out(jobs.size());
    std::vector<CosineHead> cos_out(jobs.size());
    for_each_row(jobs.size(), [&](std::size_t i) {
      const PoolingJob& j = jobs[i];
      if (i == 0 || jobs[i - 1].dump != j.dump) ctx.progress("pooling: " + j.dump->model + ": " + j.dump->name);
      if (j.kind == PoolingJob::Kind::Row) row_out[i] = measure_row(j.p, nodes);
      else cos_out[i] = measure_cosine_head(*j.dump, j.tensor, j.head, nodes);
    });
    // ... then judge and tabulate in job order, which is the same for every thread count.
    std::map<std::string, std::array<long, 4>> verified;  // model -> rows verified, rows total, heads verified, heads total
    for (const auto& d : *ctx.dumps) {
      auto& v = verified[d.model];
      const PoolingExtent e = pooling_extent(d);
      v[1] += e.rows, v[3] += e.cosine_heads;
    }
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const PoolingJob& j = jobs[i];
      const io::PromptDump& d = *j.dump;
      if (j.kind == PoolingJob::Kind::CosineHead) {
        ++verified[d.model][2];
        for (const auto& b : cos_out[i].brackets) bracket(b.width, b.source, b.where, cos_out[i].bucket_masses);
        for (const auto& c : cos_out[i].samples) {
          CosAcc& a = cos[c.key];
          if (!c.feasible) ++a.infeasible;
          a.last.push_back(c.last);
          a.window.push_back(c.window);
        }
        continue;
      }
      ++verified[d.model][0];
      const RowMeasurement& r = row_out[i];
      const std::vector<double>& p = j.p;
      max_resid_double = std::max(max_resid_double, r.merge_residual_double);
      max_resid_ext = std::max(max_resid_ext, r.merge_residual_extended);
      ++merge_rows;
      const json where = {{"model", d.model}, {"prompt", d.name}, {"tensor", j.tensor}, {"layer", j.layer}, {"head", j.head}};
      std::size_t next_free = 0;
      for (const RowMeasurement::Instance& in : r.fixed) {
        const GapRecord& g = in.gap;
        ++instances;
        if (!g.exact_feasible) { ++exact_infeasible; continue; }
        certified += g.exact_certified;
        json at = where;
        at["groups"] = in.groups, at["R"] = in.R;
        bracket(g.bracket_bits, g.upper_source, at, p);
        if (!g.greedy_feasible) ++greedy_failed;
        else {
          gaps.push_back(std::max(0.0, g.gap_low));
          gaps_high.push_back(std::max(0.0, g.gap_high));
        }
        for (int k = 0; k < 2; ++k)
          tail_fixed[k].add(oracle::judge_tail(oracle::tail_bound(p, in.R, k ? TailReading::BinaryEntropy : TailReading::PlainH),
                                               g.exact_bits, g.exact_upper, g.greedy_feasible, g.greedy_bits, g.greedy_certified_optimal));
        if (in.groups != kBuckets / 8) continue;
        const GapRecord& f = r.free_form.at(next_free++);  // the claim's own (free) form, once per budget
        if (f.exact_feasible) {
          json free_at = where;
          free_at["groups"] = "free", free_at["R"] = in.R;
          bracket(f.bracket_bits, f.upper_source, free_at, p);
        }
        for (int k = 0; k < 2; ++k)
          tail_free[k].add(oracle::judge_tail(oracle::tail_bound(p, in.R, k ? TailReading::BinaryEntropy : TailReading::PlainH),
                                              f.exact_bits, f.exact_upper, f.greedy_feasible, f.greedy_bits, f.greedy_certified_optimal));
      }
    }
    for (const auto& [model, v] : verified) {
      sampling_rows.push_back({model, "gap and tail bound: attention rows (tensor x layer x head)", v[0], v[1],
                               v[1] ? static_cast<double>(v[0]) / static_cast<double>(v[1]) : 0.0});
      sampling_rows.push_back({model, "cosine error: Q/K/V layer x query head", v[2], v[3],
                               v[3] ? static_cast<double>(v[2]) / static_cast<double>(v[3]) : 0.0});
    }
  }

  // ---- Assemble ----
  json tail_table = json::array();
  for (int k = 0; k < 2; ++k) {
    const std::string reading = oracle::to_string(k ? TailReading::BinaryEntropy : TailReading::PlainH);
    tail_table.push_back({reading, "fixed m", tail_fixed[k].to_json()});
    tail_table.push_back({reading, "free form", tail_free[k].to_json()});
  }
  s["tables"].push_back({{"title", "Tail bound h(p_down[floor(2^R)+1]) on real rows (64 buckets), outcome counts"},
                         {"columns", {"reading of h", "form", "outcomes"}}, {"rows", tail_table}});
  json cos_rows = json::array();
  for (const auto& [k, a] : cos)
    cos_rows.push_back({k.m, k.R < 0 ? json("-") : json(k.R), k.method, mean(a.last), mean(a.window), a.last.size(), a.infeasible});
  s["tables"].push_back({{"title", "Attention-output cosine error on real queries, equal retained size m (prefix T-W tokens)"},
                         {"columns", {"m", "R", "method", "mean err (last query)", "mean err (window queries)", "instances",
                                      "greedy over budget"}},
                         {"rows", cos_rows}});
  json hist = json::array();
  if (!gaps.empty()) {
    const double top = std::max(1e-12, quantile(gaps, 1.0));
    const int bins = 20;
    std::vector<long> cnt(bins, 0);
    for (double g : gaps) ++cnt[std::min(bins - 1, static_cast<int>(g / top * bins))];
    for (int b = 0; b < bins; ++b) hist.push_back({(b + 0.5) * top / bins, cnt[b]});
  }
  // Last, so the tables above keep their places: how much of what the dumps hold was verified (docs/audit.md).
  s["tables"].push_back({{"title", "Sampling: verified of what the dumps hold (--exhaustive verifies everything)"},
                         {"columns", {"model", "check", "verified", "total", "fraction"}}, {"rows", sampling_rows}});
  s["charts"].push_back({{"title", "Greedy gap (lower end of the exact bracket - greedy, bits) on real rows"}, {"kind", "histogram"},
                         {"x_label", "gap (bits)"}, {"y_label", "instances"}, {"series", {{{"name", "gap"}, {"points", hist}}}}});
  s["summary"] = {{"instances", instances}, {"exact_infeasible", exact_infeasible}, {"exact_certified", certified},
                  {"greedy_failed_when_feasible", greedy_failed}, {"gap_mean", mean(gaps)},
                  {"gap_median", quantile(gaps, 0.5)}, {"gap_max", quantile(gaps, 1.0)},
                  // The gap as an interval: [optimum's lower end - greedy, optimum's upper end - greedy].
                  {"gap_interval_median", {quantile(gaps, 0.5), quantile(gaps_high, 0.5)}},
                  {"gap_interval_mean", {mean(gaps), mean(gaps_high)}},
                  {"gap_interval_max", {quantile(gaps, 1.0), quantile(gaps_high, 1.0)}},
                  {"max_bracket_width_bits", max_bracket}, {"bracket_target_bits", kBracketTarget},
                  {"instances_over_bracket_target", over_target}, {"over_bracket_target_cases", over_target_cases},
                  {"bracket_upper_sources", upper_sources},
                  {"merge_identity_max_residual_double", max_resid_double},
                  {"merge_identity_max_residual_extended", max_resid_ext}, {"buckets", kBuckets},
                  {"counterexamples", counterexamples},
                  {"seed_synthetic", synth}};
  // Comparisons the 332-bit path could not tell, decided completely (proofs/12_exact_log_sign.md).
  const exact::ExactSignStats sign_after = exact::exact_sign_stats();
  s["summary"]["exact_decisions"] = {{"complete_decisions", sign_after.decisions - sign_before.decisions},
                                     {"exact_ties", sign_after.exact_zeros - sign_before.exact_zeros},
                                     {"needed_more_than_332_bits", sign_after.above_332_bits - sign_before.above_332_bits},
                                     {"largest_precision_bits", sign_after.max_precision_bits}};
  if (over_target > 0)
    s["findings"].push_back({{"id", "pooling-bracket-wide"}, {"rule", "exact-bracket"}, {"verdict", to_string(VerdictKind::Inconclusive)},
                             {"message", std::to_string(over_target) + " pooling instances whose proven optimum bracket is "
                                         "wider than 1e-6 bits within the work budget (widest " +
                                         std::to_string(max_bracket) + " bits): their gap figures are intervals, not values"},
                             // The first such instance: its 64 bucket masses solve again with the CLI, whose default
                             // limits are far above the audit's.
                             {"reproduce", "kvaudit partition --probs counterexample.npy --entropy-budget " +
                                               std::to_string(over_target_cases[0]["R"].get<double>()) +
                                               (over_target_cases[0]["groups"].is_number()
                                                    ? " --groups " + std::to_string(over_target_cases[0]["groups"].get<Index>())
                                                    : std::string()) +
                                               " --solver exact"},
                             {"counterexample", over_target_cases[0]}});
  if (greedy_failed > 0)
    s["findings"].push_back({{"id", "pooling-greedy-infeasible-real"}, {"rule", "greedy-feasibility"}, {"verdict", to_string(VerdictKind::Violates)},
                             {"message", std::to_string(greedy_failed) + " real-row instances where greedy ended above R "
                                         "although the exact solver found a feasible partition"},
                             {"reproduce", "kvaudit audit (stage pooling)"}, {"counterexample", counterexamples.value("greedy_infeasible", json())}});

  // ---- Claims ----
  auto tail_claim = [&](int k) {
    const bool shrunk = counterexamples.contains(std::string("tail-free-") + (k ? "binary" : "plain-h")) &&
                        counterexamples[std::string("tail-free-") + (k ? "binary" : "plain-h")].is_object();
    const long viol = tail_free[k].counts.count("violated") ? tail_free[k].counts.at("violated") : 0;
    const long held = tail_free[k].counts.count("held") ? tail_free[k].counts.at("held") : 0;
    std::ostringstream m;
    m << "real rows (free form): held " << held << ", violated " << viol << ", " << tail_free[k].to_json().dump()
      << "; smallest synthetic counterexample: " << (shrunk ? "found" : "none");
    long judged = 0;
    for (const auto& [outcome, n] : tail_free[k].counts) judged += n;
    // A bound for every distribution: a certified violation refutes; rows that held are a sample, not the domain.
    return to_json(ClaimRow{
        .claim = std::string("greedy objective error <= h(p_down[floor(2^R)+1]), h = ") +
                 oracle::to_string(k ? TailReading::BinaryEntropy : TailReading::PlainH),
        .source = "seed 002",
        .measured = m.str(),
        .why = viol > 0 || shrunk ? "certified counterexamples (see findings)"
                                  : "no certified violation; inconclusive instances are not counted as held",
        .kind = ClaimKind::Universal,
        .evidence = viol > 0 || shrunk ? Evidence::Counterexample : held > 0 ? Evidence::HoldsOnSample : Evidence::NotMeasured,
        .observations = judged + (shrunk ? 1 : 0)});  // the shrunk synthetic counterexample is one case more
  };
  s["claims"].push_back(tail_claim(0));
  s["claims"].push_back(tail_claim(1));
  {
    std::ostringstream m;
    m.precision(4);
    for (const auto& row : synth["rows"])
      m << "synthetic R=" << row[0].get<double>() << ": uniform " << row[1].get<double>() << " vs entropy(exact, prior) "
        << row[2].get<double>() << "; ";
    for (const auto& [k, a] : cos)
      if (k.m == kBuckets / 8 && (k.method == "uniform" || k.method == "exact + log-mass prior"))
        m << "real m=" << k.m << (k.R < 0 ? std::string() : " R=" + std::to_string(k.R)) << " " << k.method << " "
          << mean(a.last) << "; ";
    s["claims"].push_back(to_json(ClaimRow{
        .claim = "mean cosine error 0.2024 (uniform) vs 0.0723 (entropy pooling) at 16 -> 6",
        .source = "seed 002",
        .measured = m.str(),
        .why = "the seed's generator and R are unpublished; the ordering is compared on a reconstructed synthetic setup and on real "
               "queries instead (tables)",
        .kind = ClaimKind::NotTestable}));
  }
  std::ostringstream resid;
  resid << "double max residual " << max_resid_double << ", 332-bit " << max_resid_ext << " over " << merge_rows << " 64-bucket real rows";
  // The identity is exact (proof 01); the double residual is rounding of sums of h and is reported, not judged. The
  // executed check is the 332-bit residual against kMergeResidualBound, which a wrong identity would exceed.
  s["claims"].push_back(to_json(ClaimRow{
      .claim = "merge identity H_before - Delta = H_after held to 4.9e-17",
      .source = "seed 002",
      .measured = resid.str(),
      .why = "exact by proof 01 (M3); double residuals are rounding, the 332-bit residual is checked against 2^-300",
      .kind = ClaimKind::ByConstruction,
      .evidence = merge_rows == 0 ? Evidence::NotMeasured
                  : max_resid_ext > oracle::kMergeResidualBound ? Evidence::Counterexample
                                                                : Evidence::HoldsOnEveryCase,
      .observations = merge_rows,
      .proof = "proofs/01_merge_delta.md"}));
  return s;
}

}  // namespace kvaudit::audit
