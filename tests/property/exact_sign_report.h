// Prints, when a test executable ends, how the exact decisions of core/exact/log_linear_sign.h went in it: how
// many comparisons the 332-bit path could not tell, how many were exact ties, how many needed more bits.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>

#include "core/exact/log_linear_sign.h"

namespace kvaudit::pooling_test {

class ExactSignReport : public ::testing::Environment {
 public:
  void TearDown() override {
    const auto s = exact::exact_sign_stats();
    std::printf("[exact-sign] complete decisions: %lld, exact ties: %lld, needed > 332 bits: %lld, largest precision: %lld bits\n",
                static_cast<long long>(s.decisions), static_cast<long long>(s.exact_zeros),
                static_cast<long long>(s.above_332_bits), static_cast<long long>(s.max_precision_bits));
  }
};

inline const ::testing::Environment* const kExactSignReport = ::testing::AddGlobalTestEnvironment(new ExactSignReport);

}  // namespace kvaudit::pooling_test
