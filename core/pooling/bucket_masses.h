// A score row as the probability vector of the pooling problem: the row normalized to sum 1 and summed into
// `buckets` contiguous equal-width buckets (token i goes to bucket floor(i * buckets / T)).
#pragma once

#include <span>
#include <vector>

#include "core/types.h"

namespace kvaudit::pooling {

std::vector<double> bucket_masses(std::span<const float> row, Index buckets);

}  // namespace kvaudit::pooling
