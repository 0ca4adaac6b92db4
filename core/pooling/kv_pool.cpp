// K/V pooling, top-k eviction and the attention-output cosine error (see kv_pool.h).
#include "core/pooling/kv_pool.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace kvaudit::pooling {

namespace {
std::vector<Index> full_bounds(const std::vector<Index>& cuts, Index n) {
  std::vector<Index> b{0};
  b.insert(b.end(), cuts.begin(), cuts.end());
  b.push_back(n);
  for (std::size_t k = 1; k < b.size(); ++k)
    if (b[k] <= b[k - 1]) throw std::invalid_argument("cuts must be strictly increasing inside (0, n)");
  return b;
}
}  // namespace

PooledCache pool_weighted(const Matrix& keys, const Matrix& values, std::span<const double> w,
                          const std::vector<Index>& cuts, double eps, Prior prior) {
  const Index n = keys.rows();
  if (values.rows() != n || static_cast<Index>(w.size()) != n) throw std::invalid_argument("shape mismatch");
  const std::vector<Index> b = full_bounds(cuts, n);
  const Index m = static_cast<Index>(b.size()) - 1;
  PooledCache out;
  out.keys = Matrix::Zero(m, keys.cols());
  out.values = Matrix::Zero(m, values.cols());
  for (Index k = 0; k < m; ++k) {
    double q = 0.0;
    for (Index i = b[k]; i < b[k + 1]; ++i) {
      q += w[i];
      out.keys.row(k) += w[i] * keys.row(i);
      out.values.row(k) += w[i] * values.row(i);
    }
    out.keys.row(k) /= (q + eps);
    out.values.row(k) /= (q + eps);
    if (prior == Prior::LogMass)
      out.log_prior.push_back(q > 0.0 ? std::log(q) : -std::numeric_limits<double>::infinity());
  }
  return out;
}

std::vector<Index> uniform_cuts(Index n, Index groups) {
  if (groups < 1 || groups > n) throw std::invalid_argument("groups must be in [1, n]");
  std::vector<Index> cuts;
  for (Index k = 1; k < groups; ++k) cuts.push_back(static_cast<Index>(std::llround(double(k) * n / groups)));
  return cuts;
}

PooledCache pool_uniform(const Matrix& keys, const Matrix& values, Index groups, Prior prior) {
  const Index n = keys.rows();
  const std::vector<Index> b = full_bounds(uniform_cuts(n, groups), n);
  PooledCache out;
  out.keys = Matrix::Zero(groups, keys.cols());
  out.values = Matrix::Zero(groups, values.cols());
  for (Index k = 0; k < groups; ++k) {
    const double width = static_cast<double>(b[k + 1] - b[k]);
    out.keys.row(k) = keys.middleRows(b[k], b[k + 1] - b[k]).colwise().sum() / width;
    out.values.row(k) = values.middleRows(b[k], b[k + 1] - b[k]).colwise().sum() / width;
    if (prior == Prior::LogMass) out.log_prior.push_back(std::log(width));
  }
  return out;
}

std::vector<Index> topk_positions(std::span<const double> w, Index keep) {
  const Index n = static_cast<Index>(w.size());
  if (keep < 1 || keep > n) throw std::invalid_argument("keep must be in [1, n]");
  std::vector<Index> idx(static_cast<std::size_t>(n));
  std::iota(idx.begin(), idx.end(), Index{0});
  std::stable_sort(idx.begin(), idx.end(), [&](Index a, Index b) { return w[a] > w[b]; });
  idx.resize(static_cast<std::size_t>(keep));
  std::sort(idx.begin(), idx.end());
  return idx;
}

PooledCache evict_topk(const Matrix& keys, const Matrix& values, std::span<const double> w, Index keep) {
  const std::vector<Index> pos = topk_positions(w, keep);
  PooledCache out;
  out.keys.resize(keep, keys.cols());
  out.values.resize(keep, values.cols());
  for (Index k = 0; k < keep; ++k) {
    out.keys.row(k) = keys.row(pos[k]);
    out.values.row(k) = values.row(pos[k]);
  }
  return out;
}

std::vector<double> attention_probs(const Matrix& keys, const Eigen::VectorXd& query, double scale,
                                    std::span<const double> log_prior) {
  Eigen::VectorXd logits = (keys * query) * scale;
  if (!log_prior.empty())
    for (Index k = 0; k < logits.size(); ++k) logits[k] += log_prior[k];
  const double top = logits.maxCoeff();
  std::vector<double> p(static_cast<std::size_t>(logits.size()));
  double z = 0.0;
  for (Index k = 0; k < logits.size(); ++k) z += (p[k] = std::exp(logits[k] - top));
  for (double& x : p) x /= z;
  return p;
}

Eigen::VectorXd attention_output(const PooledCache& cache, const Eigen::VectorXd& query, double scale) {
  const std::vector<double> a = attention_probs(cache.keys, query, scale, cache.log_prior);
  const Eigen::Map<const Eigen::VectorXd> av(a.data(), static_cast<Index>(a.size()));
  return cache.values.transpose() * av;
}

double cosine_error(const Eigen::VectorXd& full, const Eigen::VectorXd& approx) {
  const double nf = full.norm(), na = approx.norm();
  if (nf == 0.0 || na == 0.0) throw std::domain_error("cosine error of a zero vector is undefined");
  return 1.0 - full.dot(approx) / (nf * na);
}

}  // namespace kvaudit::pooling
