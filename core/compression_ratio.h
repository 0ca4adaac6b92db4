// Parsing and validating a compression ratio from its decimal text (e.g. "0.9", "0.85", "1e-1" rejected).
#pragma once

#include <string>

#include "core/types.h"

namespace kvaudit {

// Accepts plain decimals "0", "0.5", ".9", "0.950" with 0 <= rho < 1. Throws InputError naming `source`.
CompressionRatio parse_compression_ratio(const std::string& text, const std::string& source = "--compression-ratio");

// kvpress's budget: max(1, int(T * (1 - rho))) evaluated in IEEE double as Python does.
Index kvpress_float_budget(Index tokens, double rho);

// The exact budget max(1, floor((1 - rho) T)) from the decimal text, in integer arithmetic.
// Arbitrary-precision: any number of decimal digits (text up to 4096 characters).
Index exact_budget(Index tokens, const CompressionRatio& rho);
// floor((1 - rho) n) exactly, without the max(1, .) of exact_budget (0 when (1 - rho) n < 1).
Index exact_floor_kept(Index n, const CompressionRatio& rho);

}  // namespace kvaudit
