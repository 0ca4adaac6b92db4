// K/V pooling of contiguous groups (docs/specification.md section 4) and the attention-output cosine error used to judge it:
// entropy pooling (attention-weighted representatives), uniform contiguous pooling and top-k eviction.
#pragma once

#include <span>
#include <vector>

#include <Eigen/Dense>

#include "core/types.h"

namespace kvaudit::pooling {

using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;  // rows = tokens

// A compressed cache: one key and value per retained slot, and an optional additive logit prior per slot.
struct PooledCache {
  Matrix keys, values;
  std::vector<double> log_prior;  // empty = no prior
};

enum class Prior { None, LogMass };  // LogMass: pooled logit + log q_k (the seed prototype's variant)

// Weighted pooling: K'_k = sum_{i in k} w_i K_i / (q_k + eps), q_k = sum_{i in k} w_i, same for V'.
// Groups are (b_{k-1}, b_k] given by `cuts` (b_1..b_{m-1}). With Prior::LogMass slot k's logit gets
// + log q_k (-inf for an empty-mass group, which then receives no attention).
PooledCache pool_weighted(const Matrix& keys, const Matrix& values, std::span<const double> weights,
                          const std::vector<Index>& cuts, double eps, Prior prior);

// Uniform contiguous pooling: equal-width groups (b_k = round(k n / m)), plain means; with Prior::LogMass
// the prior is log(width), the uniform analogue of log q_k (proportional attention).
PooledCache pool_uniform(const Matrix& keys, const Matrix& values, Index groups, Prior prior);
std::vector<Index> uniform_cuts(Index n, Index groups);

// Top-k eviction: keep the `keep` positions of largest weight (ties toward the lower index), in order.
std::vector<Index> topk_positions(std::span<const double> weights, Index keep);
PooledCache evict_topk(const Matrix& keys, const Matrix& values, std::span<const double> weights, Index keep);

// softmax(keys query * scale + prior) over the cache's slots.
std::vector<double> attention_probs(const Matrix& keys, const Eigen::VectorXd& query, double scale,
                                    std::span<const double> log_prior = {});
// softmax(...) @ values.
Eigen::VectorXd attention_output(const PooledCache& cache, const Eigen::VectorXd& query, double scale);

// 1 - cos(full, approx). Throws std::domain_error when either vector has zero norm (undefined angle).
double cosine_error(const Eigen::VectorXd& full, const Eigen::VectorXd& approx);

}  // namespace kvaudit::pooling
